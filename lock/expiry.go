package lock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// tenure is how long a new holder's lock lives by our clock: the TTL it was taken or handed over
// with (less than the lease when handed over short, waiting.go rule 16), until a moment counted
// from no later than when that TTL was set; and, for a lease without a watchdog, the push of a
// lock handed over short out to its lease (a watchdog's first round is that push). Lease.Lost
// follows it (tenured, expiryMover).
type tenure struct {
	ttl   time.Duration
	until time.Time
	push  *time.Timer // nil: nothing to push

	mu    sync.Mutex
	moved func(sent time.Time) // told when the push that set the lease was sent
}

func (h *tenure) expiresAt() time.Time { return h.until }

// tenureTTL is the TTL the lock was taken or handed over with.
func (h *tenure) tenureTTL() time.Duration { return h.ttl }

func (h *tenure) onExtend(f func(sent time.Time)) {
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
			moved(sent)
		}
	})
}

// stopPush stops the push, if any (the lock is being released).
func (h *tenure) stopPush() {
	if h.push != nil {
		h.push.Stop()
	}
}

// freshen renews now a lock handed over from another process when what this process knows of
// its TTL is stale: the release that handed it over is known only to have come after this
// waiter's last attempt, so its TTL counts from that attempt, and after a long wait little or
// none of it may be left by that count. A renewal sent now, answered, proves the lock is ours
// for a lease from its send. It does nothing while a third of the TTL is left. ErrNotHeld: the
// lock ran out before the handover reached this waiter.
func (h *tenure) freshen(ctx context.Context, lease time.Duration, renew func(context.Context) error) error {
	if time.Until(core.SafeEnd(h.until.Add(-h.ttl), h.ttl)) >= h.ttl/3 {
		return nil
	}
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

// tenured is implemented by the leases that know when their lock runs out by our clock: its TTL
// (tenureTTL) counted from when the command that took it (or the release that handed it over)
// was sent.
type tenured interface {
	expiresAt() time.Time
	tenureTTL() time.Duration
}

// expiryMover is implemented by the leases whose TTL is moved on by the lock itself (a lock
// handed over short and pushed out to its lease): the Lease's life follows, told when the push
// was sent.
type expiryMover interface{ onExtend(func(sent time.Time)) }

// attemptClock records when an acquisition last sent an attempt to take its lock: for a lease
// that knows no better (tenured), its lock runs out a lease after that, by our clock.
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
