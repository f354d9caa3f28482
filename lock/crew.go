package lock

import (
	"context"
	"fmt"
	"time"
)

// crewIdle is how long a member of a crew waits for more work before it ends.
const crewIdle = time.Second

// crew runs a Locker's calls that must not hold their caller up (an acquisition that Acquire may
// abandon, a release that goes on in the background) on goroutines it keeps: a member that has
// finished waits a moment for the next call. A busy Locker thus starts no goroutine, and grows no
// new goroutine's stack, per acquisition and per release. Members end when they have been idle
// for crewIdle or when the Locker closes.
type crew struct {
	work    chan job
	closing context.Context
}

// job is a crew's call: an acquisition runs itself (no closure to allocate), anything else is a
// jobFunc.
type job interface{ run() }

type jobFunc func()

func (f jobFunc) run() { f() }

func newCrew(closing context.Context) *crew {
	return &crew{work: make(chan job), closing: closing}
}

// offload runs call, a Redis command of the acquisition running under ctx, so that the
// acquisition ends on time whatever the server does. An acquisition running in its caller's
// goroutine (acquisition.inline) sends it from a member of its Locker's crew and waits for the
// answer as abandonAfter waits for a whole acquisition on the crew (await): a command a server
// does not answer blocks until the client's read timeout, whatever ctx says (go-redis's default). It is then given up with
// ErrUnavailable and ctx's cause, which makes an attempt orphaned (orphan.go): what it may still
// take is given back. Anywhere else (an acquisition already on the crew) call runs here.
func offload[T any](ctx context.Context, call func() (T, error)) (T, error) {
	a, ok := ctx.Value(inlineKey{}).(*acquisition)
	if !ok {
		return call()
	}
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	a.l.crew.run(func() {
		v, err := call()
		done <- answer{v, err}
	})
	if r, ok := await(ctx, done, &a.abandonAt); ok {
		return r.v, r.err
	}
	var zero T
	return zero, fmt.Errorf("%w: %w", ErrUnavailable, context.Cause(ctx))
}

// await waits for done's one value until ctx ends, then until abandonGrace after that end; false:
// given up. The end is kept in *at, set by the first wait that needs it, so the waits of one
// acquisition share one grace. Only the acquisition's caller waits.
func await[T any](ctx context.Context, done <-chan T, at *time.Time) (T, bool) {
	select {
	case r := <-done:
		return r, true
	case <-ctx.Done():
	}
	if at.IsZero() {
		*at = time.Now().Add(abandonGrace)
	}
	t := time.NewTimer(time.Until(*at))
	defer t.Stop()
	select {
	case r := <-done:
		return r, true
	case <-t.C:
		var zero T
		return zero, false
	}
}

// run calls f on an idle member, or on a new one when every member is busy.
func (c *crew) run(f func()) { c.do(jobFunc(f)) }

// do runs j on an idle member, or on a new one when every member is busy.
func (c *crew) do(j job) {
	select {
	case c.work <- j:
	default:
		go c.member(j)
	}
}

func (c *crew) member(j job) {
	idle := time.NewTimer(crewIdle)
	defer idle.Stop()
	for {
		j.run()
		if c.closing.Err() != nil {
			return
		}
		idle.Reset(crewIdle)
		select {
		case j = <-c.work:
		case <-idle.C:
			return
		case <-c.closing.Done():
			return
		}
	}
}
