package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/compare_and_delete.lua
var compareAndDeleteLua string

var compareAndDelete = redis.NewScript(compareAndDeleteLua)

// luaLocker is mode lua (document 003 case 6, 004): SET key <uuid> NX PX lease, retried until
// the wait runs out; released by one Lua compare-and-delete, so it never deletes another
// holder's lock. It has no watchdog: with business time longer than the lease, two holders
// still overlap, which is what motivates Redisson's watchdog.
type luaLocker struct {
	rdb   redis.UniversalClient
	lease time.Duration
	retry func() time.Duration
}

func newLua(d Deps) (Locker, error) {
	return &luaLocker{rdb: d.Data, lease: d.Lease, retry: jitter(2*time.Millisecond, 10*time.Millisecond)}, nil
}

func (l *luaLocker) Name() string { return "lua" }

func (l *luaLocker) Acquire(ctx context.Context, key string, opts Options) (Lease, error) {
	lease := opts.Lease
	if lease <= 0 {
		lease = l.lease
	}
	value := uuid.NewString()
	err := retryUntil(ctx, key, opts.Wait, l.retry, func(ctx context.Context) (bool, error) {
		ok, err := l.rdb.SetNX(ctx, key, value, lease).Result()
		return ok, redisErr("SET NX PX", err)
	})
	if err != nil {
		return nil, err
	}
	return &plainLease{key: key, release: func(ctx context.Context) error {
		n, err := compareAndDelete.Run(ctx, l.rdb, []string{key}, value).Int()
		if err != nil {
			return redisErr("compare-and-delete", err)
		}
		if n == 0 {
			return ErrNotHeld
		}
		return nil
	}}, nil
}

func init() {
	register(Mode{
		Name: "lua", Row: 6, Step: "003 case 6, 004", Safe: false,
		Summary: "UUID value, SET NX PX, Lua compare-and-delete release: never deletes another's lock, " +
			"but with business time > lease two holders overlap (no watchdog)",
		Faults: lockedFaults,
		New:    newLua,
	})
}
