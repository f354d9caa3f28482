package lock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
)

var fencedRenew = redis.NewScript(script.FencedRenew)

// fencedLocker is NewFenced in its default layout (Kleppmann's fencing tokens; rfenced.go has
// Redisson RFencedLock's): SET NX PX and INCR of a token counter in one script, so every
// acquisition carries a strictly increasing token; a watchdog renews the lease every lease/3
// while held. A lease alone cannot stop a holder
// that was paused past its expiry from writing afterwards; the token can: the store accepts a
// write only if no newer token has been written (store/lua/commit.lua), so a stale holder's write
// is rejected instead of overwriting a newer holder's.
//
// Waiters do not poll: they wait in turn as in mode lua (line.go), and a release hands the lock
// to the first waiter in the line kept in Redis, drawing its token in the same script.
type fencedLocker struct {
	rdb   redis.UniversalClient
	lease time.Duration
	log   *slog.Logger
	line  *waitLine
}

func newFenced(d settings) (locker, error) {
	if d.RFencedLayout {
		return newRFenced(d), nil
	}
	l := &fencedLocker{rdb: d.Data, lease: d.Lease, log: logOf(d)}
	l.line = newWaitLine(d.Data, l.log, true, d.InstanceID)
	return l, nil
}

// Close ends the pub/sub connection of the waiters.
func (l *fencedLocker) Close() error { return l.line.close() }

func (l *fencedLocker) Name() string { return "fenced" }

// fencedTokenKey is the token counter of a fenced lock key, "<key>:token". It must be in the key's
// hash slot, so the acquire script stays in one: a key with a hash tag shares it; on a cluster, a
// key without one gets its whole name as the counter's tag, "{<key>}:token" (the same slot; such
// a key never worked on a cluster before, so no counter is renamed). It has no TTL: tokens must
// keep increasing across holders.
func fencedTokenKey(rdb redis.UniversalClient, key string) string {
	if _, cluster := rdb.(*redis.ClusterClient); cluster && hashTag(key) == "" {
		return "{" + key + "}:token"
	}
	return key + ":token"
}

// Acquire runs the acquire script until it holds the lock or the wait runs out, waiting in
// line between attempts like the lua mode. An explicit lease turns the watchdog off, as
// Redisson's lock(lease) does.
func (l *fencedLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	lease := leaseOrDefault(opts, l.lease)
	leaseMs := max(lease.Milliseconds(), 1)
	value := l.line.newValue()
	hold, err := l.line.acquire(ctx, key, value, lease, opts.Wait)
	if err != nil {
		return nil, err
	}
	token := hold.token
	fl := &fencedLease{key: key, value: value, token: token, rdb: l.rdb, l: l, leaseMs: leaseMs, lineHold: hold}
	if !opts.ExplicitLease {
		fl.wd = startWatchdog(ctx, max(lease/3, time.Millisecond), func(ctx context.Context) (renewOutcome, error) {
			return outcome(renewValue(ctx, l.rdb, key, value, leaseMs))
		}, func(err error) {
			l.log.Warn("fenced lock lost: renewal failed", "key", key, "token", token, "err", err)
		})
	}
	return fl, nil
}

// fencedLease is one held fenced lock.
type fencedLease struct {
	key, value string
	token      int64
	rdb        redis.Scripter
	l          *fencedLocker
	leaseMs    int64
	wd         *watchdog // nil with an explicit lease
	// lineHold is when the lock runs out and the push of a lock handed over with less than its
	// lease (waiting.go rule 16).
	*lineHold
	gate releaseGate
}

func (l *fencedLease) Key() string  { return l.key }
func (l *fencedLease) Token() int64 { return l.token }

func (l *fencedLease) Lost() <-chan struct{} { return l.wd.Lost() }

// Renewals counts the watchdog's successful renewals.
func (l *fencedLease) Renewals() int64 { return l.wd.Renewals() }

// Release stops the watchdog and, only while the key still holds our value, passes the lock on
// to the first waiter (with a new token) or deletes it.
func (l *fencedLease) Release(ctx context.Context) error { return l.releaseAfter(ctx, nil) }

// releaseAfter is Release after the holder's pipeline p, when there is one (runScript).
func (l *fencedLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	var ours bool
	err := l.gate.release(ctx, p, l.key, func() {
		l.wd.Stop()
		if l.stop != nil {
			l.stop()
		}
	}, func() (err error) {
		ours, err = l.l.line.release(ctx, p, l.key, l.value)
		return err
	})
	if err != nil {
		return err
	}
	if !ours {
		return fmt.Errorf("%w: %s (token %d) had expired or passed to a newer holder", ErrNotHeld, l.key, l.token)
	}
	return nil
}

// refresh pushes the lock's expiry out by the lease, while the key still holds our value.
func (l *fencedLease) refresh(ctx context.Context) error {
	if l.gate.state.Load() != gateHeld {
		return fmt.Errorf("%w: %s (token %d): this lease was released", ErrNotHeld, l.key, l.token)
	}
	return renewValue(ctx, l.rdb, l.key, l.value, l.leaseMs)
}

// renewValue pushes a string lock's expiry out by leaseMs while it still holds value: ErrNotHeld
// when it does not.
func renewValue(ctx context.Context, rdb redis.Scripter, key, value string, leaseMs int64) error {
	n, err := fencedRenew.Run(ctx, rdb, []string{key}, value, leaseMs).Int()
	if err != nil {
		return redisErr("renew "+key, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: %s had expired or passed to a newer holder", ErrNotHeld, key)
	}
	return nil
}
