package lock

import (
	"context"
	"math/rand/v2"
	"time"
)

// plainLease is the Lease of modes without a watchdog or fencing: Lost is nil.
type plainLease struct {
	key     string
	gate    releaseGate
	release func(ctx context.Context) error
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
// sleeps for the interval that next returns. It is the polling loop of the documents' tryLock.
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

// noConns is embedded by the Lockers that keep no connection of their own: Close has nothing to
// end.
type noConns struct{}

func (noConns) Close() error { return nil }

// noneLocker is mode none: no lock at all, so concurrent read-check-writes lose updates.
type noneLocker struct{ noConns }

func (noneLocker) Name() string { return "none" }

func (noneLocker) Acquire(ctx context.Context, key string, _ Options) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, notObtained(ctx, key)
	}
	return &plainLease{key: key}, nil
}

func init() {
	register(Mode{
		Name: "none", Row: 1, Step: "Pitfalls, case 1", Source: "Pitfalls, case 1",
		Summary: "BROKEN: no lock; concurrent read-check-writes of the stock lose updates and oversell",
		Faults:  []string{FaultWork},
		New:     func(Deps) (Locker, error) { return noneLocker{}, nil },
	})
	register(Mode{
		Name: "atomic", Row: 11, Step: "beyond the sources: the atomic Lua decrement production uses", Source: "beyond: atomic Lua decrement", Safe: true, Atomic: true,
		Summary: "no lock: one Lua script decrements only while stock > 0 and records the order; the throughput ceiling",
	})
}
