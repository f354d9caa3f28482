package modes

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"
)

// This file holds the broken steps 2, 3 and 4 of docs/lab.md: SETNX without a TTL, EXPIRE sent
// apart, and SET NX PX released by a blind DEL (the patterns the Redis SETNX and SET pages warn
// about: https://redis.io/docs/latest/commands/setnx/, https://redis.io/docs/latest/commands/set/).
// The lab drives each one into its bug and the tests prove the bug happens.

//go:embed delete_observed.lua
var deleteObservedLua string

var deleteObserved = redis.NewScript(deleteObservedLua)

// blindRelease is the release of the broken modes: DEL the key whoever holds it. The DEL runs
// inside a script that also returns the value it removed, only so the lab can report a foreign
// unlock (ErrForeignUnlock) when that value was not ours; the other holder's lock is gone all the
// same, which is the bug. Nothing there to delete is lock.ErrNotHeld.
func blindRelease(ctx context.Context, rdb redis.Scripter, key, value string) error {
	got, err := deleteObserved.Run(ctx, rdb, []string{key}).Text()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s was already gone when DEL ran (expired, or deleted by another holder)", lock.ErrNotHeld, key)
	}
	if err != nil {
		return redisErr("DEL "+key, err)
	}
	if got != value {
		return fmt.Errorf("%w: the DEL of %s removed another holder's lock", ErrForeignUnlock, key)
	}
	return nil
}

// setNXPX is one attempt of the atomic SET key value NX PX lease (step 4 of docs/lab.md; the
// pattern of https://redis.io/docs/latest/commands/set/). PX rather than EX so the lab can use
// sub-second leases; the semantics are the same.
func setNXPX(ctx context.Context, rdb redis.UniversalClient, key, value string, lease time.Duration) (bool, error) {
	err := rdb.Do(ctx, "set", key, value, "nx", "px", max(lease.Milliseconds(), 1)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, redisErr("SET NX PX "+key, err)
	}
	return true, nil
}

// spinSetNXPX takes key with a fresh UUID value by SET NX PX, spinning until wait runs out, and
// returns the value (setnx-ex and uuid differ only in how they release it).
func spinSetNXPX(ctx context.Context, rdb redis.UniversalClient, key string, lease, wait time.Duration) (string, error) {
	value := uuid.NewString()
	err := retryUntil(ctx, key, wait, func(ctx context.Context) (bool, error) {
		return setNXPX(ctx, rdb, key, value, lease)
	})
	return value, err
}

// setnxLocker is mode setnx, DELIBERATELY BROKEN: SETNX with no expiry, so a holder that crashes
// before its DEL leaves the key forever and every later buyer spins until its wait runs out
// (deadlock, step 2 of docs/lab.md). Waiters poll with SETNX; release is a blind DEL.
type setnxLocker struct {
	noConns
	rdb redis.UniversalClient
}

func (l *setnxLocker) Name() string { return "setnx" }

func (l *setnxLocker) Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error) {
	// A unique value is not part of the document's step; it only lets the lab tell whose key a
	// blind DEL removed.
	value := uuid.NewString()
	err := retryUntil(ctx, key, opts.Wait, func(ctx context.Context) (bool, error) {
		n, err := l.rdb.Do(ctx, "setnx", key, value).Int()
		return n == 1, redisErr("SETNX "+key, err)
	})
	if err != nil {
		return nil, err
	}
	return &plainLease{key: key, release: func(ctx context.Context) error {
		return blindRelease(ctx, l.rdb, key, value)
	}}, nil
}

// setnxExpireLocker is mode setnx-expire, DELIBERATELY BROKEN, with a knob (StepHooks.BeforeExpire):
// SETNX, then EXPIRE as a second command, so a holder that dies between the two leaves a key
// with no TTL (deadlock, step 3 of docs/lab.md). The expiry is sent as PEXPIRE so the lab can use
// sub-second leases.
type setnxExpireLocker struct {
	noConns
	rdb          redis.UniversalClient
	lease        time.Duration
	beforeExpire func(ctx context.Context, key string) error
}

func (l *setnxExpireLocker) Name() string { return "setnx-expire" }

func (l *setnxExpireLocker) Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error) {
	lease := cmp.Or(opts.Lease, l.lease)
	value := uuid.NewString()
	err := retryUntil(ctx, key, opts.Wait, func(ctx context.Context) (bool, error) {
		n, err := l.rdb.Do(ctx, "setnx", key, value).Int()
		return n == 1, redisErr("SETNX "+key, err)
	})
	if err != nil {
		return nil, err
	}
	if l.beforeExpire != nil {
		if err := l.beforeExpire(ctx, key); err != nil {
			// The holder died here: the EXPIRE below is never sent.
			return nil, err
		}
	}
	// A failure here (Redis unreachable, a timeout) has the same effect as the crash: the key
	// stays with no TTL. The document's step does nothing about it, and neither does this mode.
	if err := l.rdb.PExpire(ctx, key, lease).Err(); err != nil {
		return nil, redisErr("PEXPIRE "+key+" (the key is left with no TTL)", err)
	}
	return &plainLease{key: key, release: func(ctx context.Context) error {
		return blindRelease(ctx, l.rdb, key, value)
	}}, nil
}

// setnxExLocker is mode setnx-ex, DELIBERATELY BROKEN: atomic SET NX PX, released by a blind DEL,
// so when the business time outlasts the lease, B acquires the expired lock and A's DEL removes
// B's lock (foreign unlock, then overlap and lost updates; step 4 of docs/lab.md).
type setnxExLocker struct {
	noConns
	rdb   redis.UniversalClient
	lease time.Duration
}

func (l *setnxExLocker) Name() string { return "setnx-ex" }

func (l *setnxExLocker) Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error) {
	value, err := spinSetNXPX(ctx, l.rdb, key, cmp.Or(opts.Lease, l.lease), opts.Wait)
	if err != nil {
		return nil, err
	}
	return &plainLease{key: key, release: func(ctx context.Context) error {
		return blindRelease(ctx, l.rdb, key, value)
	}}, nil
}

func init() {
	register(Mode{
		Name: "setnx", Row: 2, Step: "docs/lab.md step 2; https://redis.io/docs/latest/commands/setnx/", Source: "step 2: SETNX without a TTL",
		Summary: "BROKEN: SETNX with no expiry, blind DEL; a holder that crashes before its DEL leaves " +
			"the key with no TTL and every later sale times out (deadlock)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultHolderPause},
		New: func(d Deps) (Locker, error) {
			return &setnxLocker{rdb: d.Data}, nil
		},
	})
	register(Mode{
		Name: "setnx-expire", Row: 3, Step: "docs/lab.md step 3; https://redis.io/docs/latest/commands/setnx/", Source: "step 3: EXPIRE sent apart",
		Summary: "BROKEN: SETNX, then EXPIRE as a second command; a holder that dies between the two " +
			"leaves the key with no TTL (deadlock)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultCrashBeforeExpire, FaultHolderPause},
		New: func(d Deps) (Locker, error) {
			return &setnxExpireLocker{rdb: d.Data, lease: d.lease(), beforeExpire: d.Steps.BeforeExpire}, nil
		},
	})
	register(Mode{
		Name: "setnx-ex", Row: 4, Step: "docs/lab.md step 4; https://redis.io/docs/latest/commands/set/", Source: "step 4: SET NX PX, blind DEL",
		Summary: "BROKEN: atomic SET NX PX, blind DEL; with business time > lease the lock expires, " +
			"B acquires and A's DEL removes B's lock (foreign unlock, overlap, lost updates)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultHolderPause},
		New: func(d Deps) (Locker, error) {
			return &setnxExLocker{rdb: d.Data, lease: d.lease()}, nil
		},
	})
}
