package modes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/modes/naive"
)

// This file holds the broken steps 2 to 5 of docs/lab.md: SETNX without a TTL, EXPIRE sent apart,
// SET NX PX released by a blind DEL, and the release by GET, compare, then DEL (the patterns the
// Redis SETNX and SET pages warn about: https://redis.io/docs/latest/commands/setnx/,
// https://redis.io/docs/latest/commands/set/). What each sends is internal/modes/naive's, which
// `seckill simulate` runs too. The lab drives each one into its bug and the tests prove the bug
// happens.

// naiveLocker is a broken mode: its lock's steps (naive.Locks), sent as they are, with a knob
// that runs before one acquire or release step (StepHooks) and each holder's value a fresh UUID.
// The UUID is not part of every document's step; it only lets the lab tell whose key a blind DEL
// removed.
type naiveLocker struct {
	noConns
	name  string
	lock  naive.Lock
	rdb   redis.UniversalClient
	lease time.Duration
	// beforeAcquire and beforeRelease run before the acquire or release step of that index.
	beforeAcquire, beforeRelease map[int]func(ctx context.Context, key string) error
}

func newNaive(name string, d Deps) *naiveLocker {
	return &naiveLocker{name: name, lock: naive.Locks[name], rdb: d.Data, lease: d.lease()}
}

func (l *naiveLocker) Name() string { return l.name }

// before sets hook (nil: none) to run before step i of the acquire, or of the release.
func (l *naiveLocker) before(release bool, i int, hook func(ctx context.Context, key string) error) *naiveLocker {
	m := map[int]func(context.Context, string) error{i: hook}
	if release {
		l.beforeRelease = m
	} else {
		l.beforeAcquire = m
	}
	return l
}

// Acquire polls the first step until it goes on or the wait runs out, then sends the others once.
func (l *naiveLocker) Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error) {
	value, lease := uuid.NewString(), cmp.Or(opts.Lease, l.lease).Milliseconds()
	steps := l.lock.Acquire
	err := retryUntil(ctx, key, opts.Wait, func(ctx context.Context) (bool, error) {
		r, err := l.send(ctx, steps[0], key, value, lease)
		return err == nil && steps[0].On(r, value), err
	})
	for i := 1; err == nil && i < len(steps); i++ {
		if hook := l.beforeAcquire[i]; hook != nil {
			if err := hook(ctx, key); err != nil {
				return nil, err // the holder died here: the steps after are never sent
			}
		}
		// A failure here (Redis unreachable, a timeout) is as the crash: the steps after are
		// never sent. The document's step does nothing about it, and neither does this mode.
		_, err = l.send(ctx, steps[i], key, value, lease)
	}
	if err != nil {
		return nil, err
	}
	return &plainLease{key: key, release: func(ctx context.Context) error {
		return l.release(ctx, key, value, lease)
	}}, nil
}

// release sends the release's steps. One that does not go on ends it: ErrNotHeld when the key was
// gone or held another value (nothing deleted), ErrForeignUnlock when the last step, the DEL,
// removed another holder's lock.
func (l *naiveLocker) release(ctx context.Context, key, value string, lease int64) error {
	steps := l.lock.Release
	for i, st := range steps {
		if hook := l.beforeRelease[i]; hook != nil {
			if err := hook(ctx, key); err != nil {
				return err
			}
		}
		r, err := l.send(ctx, st, key, value, lease)
		switch {
		case err != nil:
			return err
		case st.On(r, value):
			continue
		case r == nil:
			return fmt.Errorf("%w: %s was already gone at its %s (expired, or deleted by another holder)", lock.ErrNotHeld, key, st.Name)
		case i == len(steps)-1:
			return fmt.Errorf("%w: the %s of %s removed another holder's lock", ErrForeignUnlock, st.Name, key)
		default:
			return fmt.Errorf("%w: %s holds another holder's value; not deleted", lock.ErrNotHeld, key)
		}
	}
	return nil
}

// send sends one step: its reply, Redis's nil as nil.
func (l *naiveLocker) send(ctx context.Context, st naive.Step, key, value string, lease int64) (any, error) {
	args := st.Args(key, value, lease)
	cmd := make([]any, len(args))
	for i, a := range args {
		cmd[i] = a
	}
	r, err := l.rdb.Do(ctx, cmd...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, redisErr(st.Name+" "+key, err)
	}
	return r, nil
}

func init() {
	register(Mode{
		Name: "setnx", Row: 2, Step: "docs/lab.md step 2; https://redis.io/docs/latest/commands/setnx/", Source: "step 2: SETNX without a TTL",
		Summary: "BROKEN: SETNX with no expiry, blind DEL; a holder that crashes before its DEL leaves " +
			"the key with no TTL and every later sale times out (deadlock)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultHolderPause},
		New: func(d Deps) (Locker, error) {
			return newNaive("setnx", d), nil
		},
	})
	register(Mode{
		Name: "setnx-expire", Row: 3, Step: "docs/lab.md step 3; https://redis.io/docs/latest/commands/setnx/", Source: "step 3: EXPIRE sent apart",
		Summary: "BROKEN: SETNX, then EXPIRE as a second command; a holder that dies between the two " +
			"leaves the key with no TTL (deadlock)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultCrashBeforeExpire, FaultHolderPause},
		New: func(d Deps) (Locker, error) {
			return newNaive("setnx-expire", d).before(false, 1, d.Steps.BeforeExpire), nil
		},
	})
	register(Mode{
		Name: "setnx-ex", Row: 4, Step: "docs/lab.md step 4; https://redis.io/docs/latest/commands/set/", Source: "step 4: SET NX PX, blind DEL",
		Summary: "BROKEN: atomic SET NX PX, blind DEL; with business time > lease the lock expires, " +
			"B acquires and A's DEL removes B's lock (foreign unlock, overlap, lost updates)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultHolderPause},
		New: func(d Deps) (Locker, error) {
			return newNaive("setnx-ex", d), nil
		},
	})
	register(Mode{
		Name: "uuid", Row: 5, Step: "docs/lab.md step 5; the Redis lock page: https://redis.io/docs/latest/develop/use/patterns/distributed-locks/", Source: "step 5: GET, compare, DEL",
		Summary: "BROKEN: UUID value, SET NX PX; release = GET, compare, then DEL as separate commands; " +
			"if the lock expires between compare and DEL and B acquires, A deletes B's lock (foreign unlock)",
		Faults: []string{FaultWork, FaultCrashAfterLock, FaultHolderPause, FaultPauseBeforeDel},
		New: func(d Deps) (Locker, error) {
			return newNaive("uuid", d).before(true, 1, d.Steps.BeforeDel), nil
		},
	})
}
