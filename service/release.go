package service

import (
	"context"
	"errors"
	"time"

	"seckill/internal/modes"

	"github.com/seckill-lab/seckill/lock/lockutil"

	"github.com/seckill-lab/seckill/lock"
)

// release gives the lock back, retrying a release that failed because Redis did not answer (a
// connection broken by a restart, a blip) with a short backoff until ctx ends. A lock taken just
// before the data Redis went away, or on a fresh connection beside stale ones, is then freed in
// milliseconds rather than left for its whole lease. ctx bounds the retries (the caller gives it
// a few seconds, well within the lease).
func (s *Service) release(ctx context.Context, lease modes.Lease) error {
	return s.retryRelease(ctx, lease.Key(), lease.Release)
}

// retryRelease runs release (of key) until it gets an answer from Redis or ctx ends, as release
// does for a lease.
func (s *Service) retryRelease(ctx context.Context, key string, release func(context.Context) error) error {
	backoff := 20 * time.Millisecond
	for {
		err := release(ctx)
		if err == nil || !errors.Is(err, lock.ErrUnavailable) {
			return err
		}
		s.log.Warn("release failed, retrying", "key", key, "err", err)
		if !lockutil.Sleep(ctx, backoff) {
			return err
		}
		backoff = min(2*backoff, 400*time.Millisecond)
	}
}
