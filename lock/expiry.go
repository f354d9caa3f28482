package lock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// tenure is how long a new holder's lock lives by our clock: the TTL it was taken or handed over
// with (less than the lease when handed over short, line.go's rule L4), until a moment counted
// from no later than when that TTL was set. The lease's life (watchdog.go) starts from it, and
// without a watchdog pushes a lock handed over short out to its lease.
type tenure struct {
	ttl   time.Duration
	until time.Time
}

// stale reports whether what this process knows of the lock's TTL is stale (core.Stale): a lock
// handed over from another process by a release known only to have come after this waiter's last
// attempt, so that its TTL counts from that attempt. It must be freshened before it is held.
func (h *tenure) stale() bool {
	return core.Stale(time.Now(), core.SafeEnd(h.until.Add(-h.ttl), h.ttl), h.ttl)
}

// freshen renews a stale lock by renew (the lease's renewal): a renewal sent now, answered, proves
// the lock is ours for a lease from its send. ErrNotHeld: the lock ran out before the handover
// reached this waiter.
func (h *tenure) freshen(ctx context.Context, lease time.Duration, renew func(context.Context) error) error {
	sent := time.Now()
	if err := renew(ctx); err != nil {
		return err
	}
	h.ttl, h.until = lease, sent.Add(lease)
	return nil
}

// handedOverLate is the error of an acquisition whose lock, handed over, could not be freshened;
// what it may still hold is given back in the background.
func handedOverLate(ctx context.Context, key string, err error, h heldLock) error {
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		_ = h.releaseAfter(ctx, nil)
	}()
	return fmt.Errorf("%w: %s: the lock handed over could not be confirmed: %w", ErrNotObtained, key, err)
}

// attemptClock records when an acquisition last sent an attempt to take its lock: for a lease
// that knows no better (no tenure), its lock runs out a lease after that, by our clock.
type attemptClock struct {
	last atomic.Int64
	// orphans are the give-backs of the attempts that got no answer (orphan.go).
	orphans orphans
}

type attemptKey struct{}

// inlineKey finds an acquisition that runs in its caller's goroutine (offload).
type inlineKey struct{}

// acquisition is the context one Acquire runs its kind under: ctx's values and end, bounded by the
// wait (its cause errNoAnswer) and ended by Close (Locker.acquiring); it carries the acquisition's
// attempt clock. One allocation for what a context.WithValue on a context.WithCancelCause would
// take several for.
type acquisition struct {
	context.Context
	cancel context.CancelFunc
	clock  attemptClock
	// inline: the acquisition runs in its caller's goroutine, and its commands on the crew
	// (offload); else all of it runs on the crew (abandonAfter).
	// It is set while the kind runs, and the renewals of a lease it took, which carry its values,
	// do not see it.
	inline    atomic.Bool
	abandonAt time.Time // when await gives up: abandonGrace after the context ended
	// What the crew runs (run): the Locker's acquisition of key, and where its result goes.
	l    *Locker
	key  string
	opts Options
	done chan acquired
}

// Value answers the attempt clock's key with the clock, and any other key as ctx does.
func (a *acquisition) Value(key any) any {
	switch key.(type) {
	case attemptKey:
		return &a.clock
	case inlineKey:
		if a.inline.Load() {
			return a
		}
		return nil
	}
	return a.Context.Value(key)
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
