package lock

import (
	"sync"
	"time"
)

// expiry closes lost when a lease that nothing renews runs out by this process's clock: the
// Lost channel of NewLua's leases and of explicit leases (Guarantees, clause 9).
type expiry struct {
	lost chan struct{}

	mu    sync.Mutex
	at    time.Time
	timer *time.Timer
	done  bool // stopped (released) or fired
}

func newExpiry(at time.Time) *expiry {
	e := &expiry{lost: make(chan struct{}), at: at}
	e.mu.Lock()
	e.timer = time.AfterFunc(time.Until(at), e.fire)
	e.mu.Unlock()
	return e
}

func (e *expiry) fire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return
	}
	if d := time.Until(e.at); d > 0 {
		e.timer.Reset(d) // moved on since the timer was set
		return
	}
	e.done = true
	close(e.lost)
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

// takenAter is implemented by the leases that know when the command that took the lock was sent.
type takenAter interface{ takenAt() time.Time }

// expiryMover is implemented by the leases whose TTL is moved on by the lock itself (a lock
// handed over short and pushed out to its lease): the Lease's expiry follows.
type expiryMover interface{ onExtend(func(at time.Time)) }
