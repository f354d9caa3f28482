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
	if errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("lock: %s: %w", op, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("lock: %s: %w", op, err)
	}
	return fmt.Errorf("lock: %s: %w: %w", op, ErrUnavailable, err)
}

// notObtained is the error of a wait that ran out; a cancelled context is joined to it.
func notObtained(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, key, err)
	}
	return fmt.Errorf("%w: %s", ErrNotObtained, key)
}
