package lock

import (
	"context"
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
