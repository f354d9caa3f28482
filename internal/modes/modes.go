package modes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/lockutil"
)

// Locker is what the service needs of a lock mode: the library's locks and the broken modes of
// this package alike.
type Locker interface {
	Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error)
	// Keys lists every Redis key the lock called name may use, the lock key first (the
	// library's Locker.Keys for its locks).
	Keys(name string) []string
	Close() error
}

// Lease is one held lock of a mode: all a sale needs of it. *lock.Lease is one; the broken modes'
// leases are too, with no token, no watchdog and no renewals.
type Lease interface {
	Key() string
	Token() int64
	Lost() <-chan struct{}
	Release(ctx context.Context) error
	// ReleaseAfter releases at the end of the holder's own pipeline p (the last writes), in one
	// round trip where the lock can (*lock.Lease), else p first and the release after it.
	ReleaseAfter(ctx context.Context, p redis.Pipeliner) error
	// Renewals counts the watchdog's renewals (0 without one).
	Renewals() int64
}

// HashLease is a lease in Redisson's hash layout (Field is "" for the other layouts).
type HashLease interface{ Field() string }

// MultiLease is a lease made of one lease per master (nil Parts for the others).
type MultiLease interface{ Parts() []*lock.Lease }

// ErrForeignUnlock: the release deleted a lock that another holder owned. Only the deliberately
// broken modes can return it; it is how the lab observes the bug.
var ErrForeignUnlock = errors.New("lock: released a lock held by someone else")

// plainLease is the lease of the broken modes: no watchdog, no token.
type plainLease struct {
	key      string
	released atomic.Bool
	release  func(ctx context.Context) error
}

func (l *plainLease) Key() string           { return l.key }
func (l *plainLease) Token() int64          { return 0 }
func (l *plainLease) Lost() <-chan struct{} { return nil }
func (l *plainLease) Renewals() int64       { return 0 }

// ReleaseAfter sends the holder's pipeline p, then releases: a broken mode's release is commands
// of its own, which do not join p.
func (l *plainLease) ReleaseAfter(ctx context.Context, p redis.Pipeliner) error {
	if p != nil {
		_, _ = p.Exec(ctx) // each command keeps its own error, for the holder to read
	}
	return l.Release(ctx)
}

func (l *plainLease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return lock.ErrNotHeld
	}
	if l.release == nil {
		return nil
	}
	return l.release(ctx)
}

// noConns is embedded by the Lockers that keep no connection of their own and no key but the
// lock key.
type noConns struct{}

func (noConns) Close() error { return nil }

func (noConns) Keys(name string) []string { return []string{name} }

// noneLocker is mode none: no lock at all, so concurrent read-check-writes lose updates.
type noneLocker struct{ noConns }

func (noneLocker) Acquire(ctx context.Context, key string, _ lock.Options) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", lock.ErrNotObtained, key, err)
	}
	return &plainLease{key: key}, nil
}

// retryUntil is the polling loop of a classic tryLock: try until it obtains the lock,
// fails, or the wait runs out, sleeping a random 2–10 ms between tries (their "spin").
func retryUntil(ctx context.Context, key string, wait time.Duration,
	try func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(wait)
	for {
		ok, err := try(ctx)
		if err != nil || ok {
			return err
		}
		pause := min(2*time.Millisecond+rand.N(8*time.Millisecond), time.Until(deadline))
		if pause <= 0 {
			return fmt.Errorf("%w: %s", lock.ErrNotObtained, key)
		}
		if !lockutil.Sleep(ctx, pause) {
			return fmt.Errorf("%w: %s: %w", lock.ErrNotObtained, key, ctx.Err())
		}
	}
}

// redisErr wraps a failed Redis call of a broken mode or a view as the library wraps its own: a
// reply error as it is, anything else (lockutil.Unavailable) as lock.ErrUnavailable too.
func redisErr(op string, err error) error { return lockutil.RedisErr(op, err, lock.ErrUnavailable) }
