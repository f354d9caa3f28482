package modes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"
)

// uuidLocker is mode uuid, DELIBERATELY BROKEN, with a knob (StepHooks.BeforeDel): a UUID value with SET NX PX, released by GET,
// compare, then DEL as separate commands, so when the lock expires between the compare and the
// DEL and B acquires, A's DEL removes B's lock (foreign unlock; step 5 of docs/lab.md). The
// value check does stop the simple case of step 4 (the key is already B's when A checks).
type uuidLocker struct {
	noConns
	rdb       redis.UniversalClient
	lease     time.Duration
	beforeDel func(ctx context.Context, key string) error
}

func (l *uuidLocker) Name() string { return "uuid" }

func (l *uuidLocker) Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error) {
	value, err := spinSetNXPX(ctx, l.rdb, key, cmp.Or(opts.Lease, l.lease), opts.Wait)
	if err != nil {
		return nil, err
	}
	return &plainLease{key: key, release: func(ctx context.Context) error {
		return l.release(ctx, key, value)
	}}, nil
}

// release is the document's unlock: GET, compare in the client, then DEL. The window between
// the compare and the DEL is the bug; the BeforeDel knob widens it on demand.
func (l *uuidLocker) release(ctx context.Context, key, value string) error {
	got, err := l.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s was gone before the check (expired, or deleted by another holder)", lock.ErrNotHeld, key)
	}
	if err != nil {
		return redisErr("GET "+key, err)
	}
	if got != value {
		return fmt.Errorf("%w: %s holds another holder's value; not deleted", lock.ErrNotHeld, key)
	}
	if l.beforeDel != nil {
		if err := l.beforeDel(ctx, key); err != nil {
			return err
		}
	}
	// The check above is already stale here: the DEL removes whatever holds the key now.
	return blindRelease(ctx, l.rdb, key, value)
}

func init() {
	register(Mode{
		Name: "uuid", Row: 5, Step: "docs/lab.md step 5; the Redis lock page: https://redis.io/docs/latest/develop/use/patterns/distributed-locks/", Source: "step 5: GET, compare, DEL",
		Summary: "BROKEN: UUID value, SET NX PX; release = GET, compare, then DEL as separate commands; " +
			"if the lock expires between compare and DEL and B acquires, A deletes B's lock (foreign unlock)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultHolderPause, FaultPauseBeforeDel},
		New: func(d Deps) (Locker, error) {
			return &uuidLocker{rdb: d.Data, lease: d.lease(), beforeDel: d.Steps.BeforeDel}, nil
		},
	})
}
