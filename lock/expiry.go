package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// expiry closes lost when a lease runs out by this process's clock, unless extended or stopped
// first: the Lost channel of NewLua's leases and of explicit leases (Guarantees, clause 8), and of
// Redlock's, whose validity ends where an extension did not move it.
type expiry struct {
	lost   chan struct{}
	onLost func() // run once lost has closed (nil: nothing)

	mu    sync.Mutex
	at    time.Time
	timer *time.Timer
	done  bool // stopped (released) or lost
}

func newExpiry(at time.Time, onLost func()) *expiry {
	e := &expiry{lost: make(chan struct{}), at: at, onLost: onLost}
	e.mu.Lock()
	e.timer = time.AfterFunc(time.Until(at), e.fire)
	e.mu.Unlock()
	return e
}

func (e *expiry) fire() {
	e.mu.Lock()
	if !e.done {
		if d := time.Until(e.at); d > 0 {
			e.timer.Reset(d) // moved on since the timer was set
			e.mu.Unlock()
			return
		}
	}
	e.mu.Unlock()
	e.lose()
}

// lose closes lost now (a renewal failed), unless stopped or lost already.
func (e *expiry) lose() {
	e.mu.Lock()
	if e.done {
		e.mu.Unlock()
		return
	}
	e.done = true
	e.timer.Stop()
	close(e.lost)
	e.mu.Unlock()
	if e.onLost != nil {
		e.onLost()
	}
}

// end is when the lease runs out now.
func (e *expiry) end() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.at
}

// extend moves the end to at, when later: a Refresh, or the push of a lock handed over short.
func (e *expiry) extend(at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done && at.After(e.at) {
		e.at = at
	}
}

// stop ends the timer: the lease was released, so it is not lost.
func (e *expiry) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	e.timer.Stop()
}

// tenure is how long a new holder's lock lives by our clock: the TTL it was taken or handed over
// with (less than the lease when handed over short, waiting.go rule 16), until a moment counted
// from no later than when that TTL was set; and, for a lease without a watchdog, the push of a
// lock handed over short out to its lease (a watchdog's first round is that push). Lease.Lost
// follows it (expiresAter, expiryMover).
type tenure struct {
	ttl   time.Duration
	until time.Time
	push  *time.Timer // nil: nothing to push

	mu    sync.Mutex
	moved func(time.Time) // told the new expiry a push sets
}

func (h *tenure) expiresAt() time.Time { return h.until }

func (h *tenure) onExtend(f func(time.Time)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.moved = f
}

// pushLater pushes the lock out to lease a third of the way into its TTL, by push, when that is
// shorter than the lease: a live holder keeps the lease it asked for. Not at once: most holds end
// long before, and their release (stopPush) makes the push needless. A push that fails is given
// to onFail, and Lost then closes at the end of the TTL.
func (h *tenure) pushLater(ctx context.Context, lease time.Duration, push func(context.Context) error, onFail func(error)) {
	if h.ttl >= lease {
		return
	}
	base := context.WithoutCancel(ctx)
	h.push = time.AfterFunc(h.ttl/3, func() {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(base, releaseTimeout)
		defer cancel()
		if err := push(ctx); err != nil {
			onFail(err)
			return
		}
		h.mu.Lock()
		moved := h.moved
		h.mu.Unlock()
		if moved != nil {
			moved(sent.Add(lease))
		}
	})
}

// stopPush stops the push, if any (the lock is being released).
func (h *tenure) stopPush() {
	if h.push != nil {
		h.push.Stop()
	}
}

// expiresAter is implemented by the leases that know when their lock runs out by our clock:
// its TTL counted from when the command that took it (or the release that handed it over) was
// sent.
type expiresAter interface{ expiresAt() time.Time }

// expiryMover is implemented by the leases whose TTL is moved on by the lock itself (a lock
// handed over short and pushed out to its lease): the Lease's expiry follows.
type expiryMover interface{ onExtend(func(at time.Time)) }

// attemptClock records when an acquisition last sent an attempt to take its lock: for a lease
// that knows no better (expiresAter), its lock runs out a lease after that, by our clock.
type attemptClock struct {
	last atomic.Int64
	// orphans are the give-backs of the attempts that got no answer (orphan.go).
	orphans orphans
}

type attemptKey struct{}

// withAttemptClock gives ctx a new clock.
func withAttemptClock(ctx context.Context) (context.Context, *attemptClock) {
	c := &attemptClock{}
	return context.WithValue(ctx, attemptKey{}, c), c
}

// markAttempt records, on ctx's clock, that an attempt is being sent now.
func markAttempt(ctx context.Context) {
	if c, ok := ctx.Value(attemptKey{}).(*attemptClock); ok {
		c.last.Store(time.Now().UnixNano())
	}
}

// attemptSent is when ctx's acquisition last sent an attempt, or def when none was recorded.
func attemptSent(ctx context.Context, def time.Time) time.Time {
	if c, ok := ctx.Value(attemptKey{}).(*attemptClock); ok {
		return c.since(def)
	}
	return def
}

// since is when the last attempt was sent, or def when none was recorded.
func (c *attemptClock) since(def time.Time) time.Time {
	if n := c.last.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return def
}
