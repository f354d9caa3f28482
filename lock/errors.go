package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill-lab/seckill/lock/lockutil"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotObtained: the lock was not acquired within the wait (or the context ended first; then
	// the error also wraps ctx.Err(); or the Locker was closed: then it also wraps ErrClosed).
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld: a release or refresh by someone who does not hold the lock (any more), as in
	// Redisson's IllegalMonitorStateException.
	ErrNotHeld = errors.New("lock: not held by this owner")
	// ErrUnavailable: a Redis server needed by the lock did not answer (or no client was given).
	ErrUnavailable = errors.New("lock: redis unavailable")
	// ErrClosed: the Locker was closed (Locker.Close) before or during the acquisition.
	ErrClosed = errors.New("lock: Locker closed")
)

// errLost is why a watchdog or a validity timer gave a lease up (logged; Lease.Lost says it).
var errLost = errors.New("lock: lost while held")

// ErrNotReplicated: the lock was taken on the master but fewer replicas than WithReplicas asks
// for acknowledged it within the timeout, so the acquisition was undone. It is also
// ErrUnavailable.
var ErrNotReplicated = errors.New("lock: not acknowledged by enough replicas")

// errNoAnswer is the cause of an acquisition's deadline: Wait + answerGrace passed with a call
// to Redis still unanswered.
var errNoAnswer = errors.New("no answer from Redis within the wait")

// redisErr wraps an error from a Redis call: a reply error from the server stays as it is, every
// other failure (refused connection, timeout, closed pool, a server that will not serve) also
// wraps ErrUnavailable (lockutil.Unavailable is the rule).
func redisErr(op string, err error) error { return lockutil.RedisErr(op, err, ErrUnavailable) }

// notObtained is the error of a wait that ran out; a cancelled context is joined to it.
func notObtained(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, key, err)
	}
	return fmt.Errorf("%w: %s", ErrNotObtained, key)
}
