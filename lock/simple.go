package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// plainLease is the Lease of modes without a watchdog or fencing: Lost is nil.
type plainLease struct {
	key     string
	gate    releaseGate
	release func(ctx context.Context) error
	renew   func(ctx context.Context) error
}

func (l *plainLease) refresh(ctx context.Context) error {
	if l.gate.state.Load() != gateHeld {
		return fmt.Errorf("%w: %s: this lease was released", ErrNotHeld, l.key)
	}
	return l.renew(ctx)
}

func (l *plainLease) Key() string           { return l.key }
func (l *plainLease) Token() int64          { return 0 }
func (l *plainLease) Lost() <-chan struct{} { return nil }

func (l *plainLease) Release(ctx context.Context) error {
	if _, ok := l.gate.begin(); !ok {
		return ErrNotHeld
	}
	if l.release == nil {
		return l.gate.end(nil)
	}
	return l.gate.end(l.release(ctx))
}

// sleep waits for d or until ctx ends, whichever is first; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryUntil calls try until it obtains the lock, fails, or the wait runs out; between tries it
// sleeps for the interval that next returns. It is the polling loop of a classic tryLock.
func retryUntil(ctx context.Context, key string, wait time.Duration, next func() time.Duration,
	try func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(wait)
	for {
		ok, err := try(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return notObtained(ctx, key)
		}
		if !sleep(ctx, min(next(), left)) {
			return notObtained(ctx, key)
		}
	}
}

// jitter returns a retry interval between lo and hi, so that pollers do not move in lockstep.
func jitter(lo, hi time.Duration) func() time.Duration {
	return func() time.Duration { return lo + rand.N(hi-lo+1) }
}

// leaseOrDefault is the lease an acquisition asks for, or the mode's default.
func leaseOrDefault(opts Options, def time.Duration) time.Duration {
	if opts.Lease > 0 {
		return opts.Lease
	}
	return def
}
