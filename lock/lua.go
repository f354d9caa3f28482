package lock

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// luaLocker is NewLua (the compare-and-delete lock of https://redis.io/docs/latest/develop/use/patterns/distributed-locks/): SET key <uuid> NX PX lease, retried until
// the wait runs out; released by one Lua compare-and-delete, so it never deletes another
// holder's lock. It has no watchdog: with business time longer than the lease, two holders
// still overlap, which is what motivates Redisson's watchdog.
//
// Unlike a retry loop with a fixed sleep, waiters wait in turn: in this process behind each
// other in the key's queue (handoff.go), and across processes in the line kept in Redis
// (line.go). The release script hands the lock to the first waiter in that line (it writes that
// waiter's value in, the compare of the compare-and-delete unchanged) and tells only that
// waiter's process, so one release wakes one waiter wherever it is, after at most a cohort of
// holders of the releasing process in a row (lock cohorting, line.go); with nobody waiting it
// deletes the lock. A lock whose holder died still passes on when it expires, exactly as with
// polling.
type luaLocker struct {
	rdb   redis.UniversalClient
	lease time.Duration
	line  *waitLine
}

func newLua(d settings) (locker, error) {
	l := &luaLocker{rdb: d.Data, lease: d.Lease}
	l.line = newWaitLine(d.Data, logOf(d), false, d.InstanceID)
	return l, nil
}

func (l *luaLocker) Name() string { return "lua" }

func (l *luaLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	lease := leaseOrDefault(opts, l.lease)
	value := l.line.newValue()
	hold, err := l.line.acquire(ctx, key, value, lease, opts.Wait)
	if err != nil {
		return nil, err
	}
	leaseMs := max(lease.Milliseconds(), 1)
	return &plainLease{key: key, lineHold: hold,
		release: func(ctx context.Context, p redis.Pipeliner) error {
			if hold.stop != nil {
				hold.stop()
			}
			return l.release(ctx, p, key, value)
		},
		renew: func(ctx context.Context) error { return renewValue(ctx, l.rdb, key, value, leaseMs) },
	}, nil
}

// release gives the lock back and passes it on to one waiter (line.go), after the holder's
// pipeline p when there is one.
func (l *luaLocker) release(ctx context.Context, p redis.Pipeliner, key, value string) error {
	ours, err := l.line.release(ctx, p, key, value)
	if err != nil {
		return err
	}
	if !ours {
		return ErrNotHeld
	}
	return nil
}

// Close ends the pub/sub connection of the waiters.
func (l *luaLocker) Close() error { return l.line.close() }

// logOf is d's logger, or the default, one that discards (apply gives every Locker its result).
func logOf(d settings) *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// plainLease is the Lease of NewLua: no watchdog, no fencing (Lease.Lost follows its TTL).
type plainLease struct {
	*lineHold // when it runs out, and the push of a lock handed over short
	key       string
	gate      releaseGate
	// release gives the lock back, after the holder's pipeline p when there is one (runScript).
	release func(ctx context.Context, p redis.Pipeliner) error
	renew   func(ctx context.Context) error
}

func (l *plainLease) refresh(ctx context.Context) error {
	if l.gate.state.Load() != gateHeld {
		return fmt.Errorf("%w: %s: this lease was released", ErrNotHeld, l.key)
	}
	return l.renew(ctx)
}

func (l *plainLease) Key() string           { return l.key }
func (l *plainLease) Token() int64          { return 0 }
func (l *plainLease) Lost() <-chan struct{} { return nil }

func (l *plainLease) Release(ctx context.Context) error { return l.releaseAfter(ctx, nil) }

func (l *plainLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	return l.gate.release(ctx, p, l.key, nil, func() error { return l.release(ctx, p) })
}
