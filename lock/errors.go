package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

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
