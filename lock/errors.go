package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
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

// ErrNotReplicated: the lock was taken on the master but fewer replicas than lock.waitReplicas
// acknowledged it within the timeout, so the acquisition was undone. It is also ErrUnavailable.
var ErrNotReplicated = errors.New("lock: not acknowledged by enough replicas")

// errNoAnswer is the cause of an acquisition's deadline: Wait + answerGrace passed with a call
// to Redis still unanswered.
var errNoAnswer = errors.New("no answer from Redis within the wait")

// redisErr wraps an error from a Redis call: a reply error from the server stays as it is, every
// other failure (refused connection, timeout, closed pool) also wraps ErrUnavailable.
func redisErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var reply redis.Error
	if errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) && !refusesService(err) {
		return fmt.Errorf("lock: %s: %w", op, err)
	}
	// No answer, a broken connection, a context that ended before the answer, or a server that
	// answers but will not serve (a wrong password, loading, no master): unavailable.
	return fmt.Errorf("lock: %s: %w: %w", op, ErrUnavailable, err)
}

// notObtained is the error of a wait that ran out; a cancelled context is joined to it.
func notObtained(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, key, err)
	}
	return fmt.Errorf("%w: %s", ErrNotObtained, key)
}

// refusesService reports whether a reply error says the server will not serve anyone now, rather
// than that this command was wrong: a wrong or missing password, a dataset still loading, a
// replica without its master, a cluster that is down.
func refusesService(err error) bool {
	for _, p := range []string{"WRONGPASS", "NOAUTH", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
