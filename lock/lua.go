package lock

import (
	"cmp"
	"context"
	_ "embed"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/compare_and_delete_publish.lua
	compareAndDeletePublishLua string
	//go:embed lua/handover_release.lua
	handoverReleaseLua string

	compareAndDeletePublish = redis.NewScript(compareAndDeletePublishLua)
	handoverRelease         = redis.NewScript(handoverReleaseLua)
)

// luaLocker is NewLua (the compare-and-delete lock of https://redis.io/docs/latest/develop/use/patterns/distributed-locks/): SET key <uuid> NX PX lease, retried until
// the wait runs out; released by one Lua compare-and-delete, so it never deletes another
// holder's lock. It has no watchdog: with business time longer than the lease, two holders
// still overlap, which is what motivates Redisson's watchdog.
//
// Unlike a retry loop with a fixed sleep, the waiters of this process wait in line (handoff.go) until
// a release wakes the head (a release here rings the line directly; one in another process
// through the PUBLISH in the release script) or until the holder's PTTL (read in the same round
// trip as the failed SET), so a lock that expires still passes to the next holder when it
// expires, exactly as with polling. When no other process waits, the release hands the lock
// straight to this process's next waiter (handover_release.lua), which then holds it without a
// round trip of its own.
type luaLocker struct {
	rdb   redis.UniversalClient
	lease time.Duration
	log   *slog.Logger
	sub   *subscriber
	line  *handoff
	// id is the payload of this Locker's release messages: its own releases ring its line
	// directly, so its subscriber ignores them.
	id string
}

func newLua(d settings) (locker, error) {
	l := &luaLocker{rdb: d.Data, lease: cmp.Or(d.Lease, DefaultLease), id: uuid.NewString(), log: logOf(d)}
	l.sub, l.line = newSubscribedLine(d.Data, l.log, func(payload string) bool { return payload != l.id }, true)
	l.line.dropOrphan = l.dropOrphan
	return l, nil
}

func (l *luaLocker) Name() string { return "lua" }

func (l *luaLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	lease := opts.Lease
	if lease <= 0 {
		lease = l.lease
	}
	value := uuid.NewString()
	try := func(ctx context.Context) (bool, time.Duration, error) {
		return setNXPXOrTTL(ctx, l.rdb, key, value, lease)
	}
	if err := l.line.obtainAs(ctx, key, value, opts.Wait, lease, false, try); err != nil {
		return nil, err
	}
	leaseMs := max(lease.Milliseconds(), 1)
	return &plainLease{key: key,
		release: func(ctx context.Context) error { return l.release(ctx, key, value) },
		renew:   func(ctx context.Context) error { return renewValue(ctx, l.rdb, key, value, leaseMs) },
	}, nil
}

// release gives the lock back and passes it on: straight to this process's next waiter when no
// other process waits for it (handover_release.lua; handoff.go, rule 7), else by deleting it and
// publishing the release.
func (l *luaLocker) release(ctx context.Context, key, value string) error {
	next, subscribed := l.line.offer(key)
	nextValue, nextLease, own := "", int64(0), 0
	if next != nil {
		nextValue, nextLease = next.value, max(next.lease.Milliseconds(), 1)
	}
	if subscribed {
		own = 1
	}
	n, err := handoverRelease.Run(ctx, l.rdb, []string{key, unlockChannel(key)}, value, l.id, nextValue, nextLease, own).Int()
	if err == nil && n == 2 {
		if !l.line.grant(key, next) {
			l.dropOrphan(key, nextValue)
		}
		return nil
	}
	l.line.ring(key) // the waiters of this process, at once
	if err != nil {
		return redisErr("compare-and-delete", err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// dropOrphan deletes a lock handed over to a waiter that had left meanwhile, and tells the waiters.
func (l *luaLocker) dropOrphan(key, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := compareAndDeletePublish.Run(ctx, l.rdb, []string{key, unlockChannel(key)}, value, l.id).Err(); err != nil {
		l.log.Warn("lua: delete a lock handed to a waiter that left", "key", key, "err", err)
	}
	l.line.ring(key)
}

// setNXPXOrTTL is one attempt of SET key value NX PX lease; when someone else holds the key, it
// also reads the key's PTTL in the same round trip (a pipeline), so a waiter knows when the lock
// is free at the latest. ttl < 0 when the key has no TTL; 0 when it vanished between the two.
func setNXPXOrTTL(ctx context.Context, rdb redis.UniversalClient, key, value string, lease time.Duration) (bool, time.Duration, error) {
	var set *redis.BoolCmd
	var pttl *redis.DurationCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetNX(ctx, key, value, lease)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err != nil {
		return false, 0, redisErr("SET NX PX "+key, err)
	}
	if set.Val() {
		return true, 0, nil
	}
	// go-redis gives PTTL's -2 (no such key) and -1 (no TTL) as those many nanoseconds.
	d := pttl.Val()
	if d < 0 {
		return false, holderTTL(int64(d)), nil
	}
	return false, d, nil
}

// Close ends the pub/sub connection of the waiters.
func (l *luaLocker) Close() error {
	l.line.close()
	return l.sub.Close()
}

func logOf(d settings) *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}
