// Package lock is a library of Redis distributed locks, the safe steps of the Redis-lock story:
// a Lua compare-and-delete lock (NewLua), Redisson's reentrant lock with its watchdog
// (NewReentrant) and its fair lock (NewFair), a lock with fencing tokens (NewFenced), Redisson's
// MultiLock (NewMultilock) and Redlock over independent masters (NewRedlock; with fencing tokens
// too, WithFencingTokens). Each takes go-redis clients and Options; waiters
// are woken by the release instead of polling, and the modes with a watchdog renew a held lock
// every lease/3 and close Lease.Lost when they cannot.
//
// A Locker is shared and stateless per acquisition: every Acquire hands out a Lease that carries
// its own token, so many requests can use one Locker at once (as in bsm/redislock).
//
// The commands of an acquisition, its watchdog's renewals included, run under the values of the
// context given to Acquire (not its cancellation), so tracing and go-redis hooks see a renewal as
// part of the acquisition that started it. That is also how the seckill lab injects its faults (a
// crash, a stop-the-world pause) from outside the package, in seckill/lab/fault.
//
// The seckill service reaches every mode, the deliberately broken ones of its lab included,
// through the Registry by name.
package lock

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotObtained: the lock was not acquired within the wait (or the context ended first; then
	// the error also wraps ctx.Err()).
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld: a release (or renewal) by someone who does not hold the lock, as in Redisson's
	// IllegalMonitorStateException.
	ErrNotHeld = errors.New("lock: not held by this owner")
	// ErrForeignUnlock: the release deleted a lock that another holder owned. Only the
	// deliberately broken modes can return it; it is how the lab observes the bug.
	ErrForeignUnlock = errors.New("lock: released a lock held by someone else")
	// ErrUnavailable: a Redis server needed by the lock did not answer.
	ErrUnavailable = errors.New("lock: redis unavailable")
	// ErrLost: the lock was lost while held (renewal failed or validity ran out).
	ErrLost = errors.New("lock: lost while held")
)

// Locker acquires one kind of lock. Implementations must be safe for concurrent use.
type Locker interface {
	// Name is the mode name used in configuration and in ?lock=NAME.
	Name() string
	// Acquire blocks until the lock named key is held, opts.Wait has elapsed (ErrNotObtained) or
	// ctx is done (ErrNotObtained wrapping ctx.Err()). A Redis server that does not answer is
	// ErrUnavailable.
	Acquire(ctx context.Context, key string, opts Options) (Lease, error)
	// Close ends the Locker's own connections (the waiters' subscriptions). Leases still held
	// keep their lock until they are released or expire.
	Close() error
}

// Options tune one acquisition.
type Options struct {
	// Wait bounds how long Acquire waits for the lock. Zero means one attempt.
	Wait time.Duration
	// Lease is how long the lock lives in Redis without renewal. Zero means the mode's default
	// (for reentrant modes: the watchdog timeout, renewed every Lease/3 while held).
	Lease time.Duration
	// ExplicitLease, for modes with a watchdog, turns the watchdog off (Redisson's lock(lease)).
	ExplicitLease bool
	// Owner identifies the holder for re-entry: acquisitions of a reentrant lock with the same
	// Owner re-enter it and need as many releases (Redisson uses the thread id). Empty: a new
	// owner for this acquisition alone. Modes without re-entry ignore it.
	Owner string
}

// Lease is one held lock.
type Lease interface {
	// Key is the lock's key (or name).
	Key() string
	// Token is the fencing token of this acquisition, 0 for modes without fencing.
	Token() int64
	// Lost is closed when the holder learns that the lock is gone (watchdog renewal failed, or
	// redlock's validity ran out). Modes that cannot tell return a nil channel.
	Lost() <-chan struct{}
	// Release gives the lock back. Releasing twice, or a lock one no longer holds, is
	// ErrNotHeld (or ErrForeignUnlock for the broken modes that delete blindly).
	Release(ctx context.Context) error
}

// Renewer is implemented by the leases of the modes with a watchdog (reentrant, fenced,
// multilock, redlock): how many renewals have succeeded so far, for metrics and tests.
type Renewer interface {
	Renewals() int64
}

// ownerOf is the owner of one acquisition: opts.Owner, or a new one for this acquisition alone.
func ownerOf(opts Options) string {
	if opts.Owner != "" {
		return opts.Owner
	}
	return uuid.NewString()
}
