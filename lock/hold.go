package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// The driver of a core.Hold: it sends what the Hold builds and reads the replies with it. What
// each kind of Hold sends and what its answers mean is in lock/core; what is here is go-redis.

// reply is cmd's reply as a Hold reads it: Redis's nil is a nil reply, not an error.
func reply(cmd *redis.Cmd) (any, error) {
	r, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return r, err
}

// attempt sends h's acquire for a through s and reads it at the holder's clock: a reply of no
// shape h answers is an error.
func attempt(ctx context.Context, s redis.Scripter, mode *pubsubMode, h core.Hold, a core.Ask) (core.Try, error) {
	r, err := reply(mode.run(ctx, s, h.Acquire(a)))
	if err != nil {
		return core.Try{}, redisErr("acquire "+a.Key, err)
	}
	t := h.Tried(r, time.Now())
	if t.Odd {
		return t, fmt.Errorf("lock: acquire %s: unexpected reply %v", a.Key, r)
	}
	return t, nil
}

// renewHold sends h's renewal for a through s: gone's ErrNotHeld when the hold is gone.
func renewHold(ctx context.Context, s redis.Scripter, mode *pubsubMode, h core.Hold, a core.Ask, gone func() error) error {
	a.Now = time.Now()
	return renewReply(a.Key, mode.run(ctx, s, h.Renew(a)), gone)
}

// renewReply reads cmd, a renewal of key: gone's ErrNotHeld when it did not renew.
func renewReply(key string, cmd *redis.Cmd, gone func() error) error {
	r, err := reply(cmd)
	switch {
	case err != nil:
		return redisErr("renew "+key, err)
	case !core.Renewed(r):
		return gone()
	}
	return nil
}

// releaseHold sends h's release for a, after the holder's pipeline p when there is one
// (runScript): gone's ErrNotHeld when a's holder did not hold it.
func releaseHold(ctx context.Context, p redis.Pipeliner, rdb redis.UniversalClient, mode *pubsubMode, h core.Hold, a core.Ask, gone func() error) error {
	if a.Now.IsZero() {
		a.Now = time.Now()
	}
	c := h.Release(a)
	r, err := reply(runScript(ctx, p, rdb, mode.script(ctx, c.Script), c))
	switch {
	case err != nil:
		return redisErr("release "+a.Key, err)
	case !h.Released(r):
		return gone()
	}
	return nil
}

// noField is ErrNotHeld for a hash lock that no longer has the holder's field.
func noField(key, field string) error {
	return fmt.Errorf("%w: %s has no field %s (the lease ran out, or another owner holds it)", ErrNotHeld, key, field)
}
