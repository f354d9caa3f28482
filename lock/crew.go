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
	work    chan func()
	closing context.Context
}

func newCrew(closing context.Context) *crew {
	return &crew{work: make(chan func()), closing: closing}
}

// run calls f on an idle member, or on a new one when every member is busy.
func (c *crew) run(f func()) {
	select {
	case c.work <- f:
	default:
		go c.member(f)
	}
}

func (c *crew) member(f func()) {
	idle := time.NewTimer(crewIdle)
	defer idle.Stop()
	for {
		f()
		if c.closing.Err() != nil {
			return
		}
		idle.Reset(crewIdle)
		select {
		case f = <-c.work:
		case <-idle.C:
			return
		case <-c.closing.Done():
			return
		}
	}
}
