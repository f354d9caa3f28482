package lock

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
)

// valueLocker is NewLua and NewFenced in its default layout: the lock is a string holding its
// holder's value, taken with SET NX PX and released by a compare-and-delete, so a holder never
// deletes another's lock (the pattern of
// https://redis.io/docs/latest/develop/use/patterns/distributed-locks/).
//
// NewFenced (fenced) adds two things. Every acquisition draws a fencing token from a counter kept
// beside the lock, in the script that takes it, so tokens strictly increase across holders (a
// lease alone cannot stop a holder paused past its expiry from writing afterwards; a store that
// refuses a write older than the newest token it has seen can); and a watchdog renews the lease
// every lease/3 while held, unless the lease is explicit. NewLua has neither: with business time
// longer than the lease, two holders overlap, which is what motivates Redisson's watchdog.
//
// Waiters do not poll: in this process they wait behind each other in the key's queue
// (handoff.go), and across processes in the line kept in Redis (line.go). The release hands the
// lock to the first waiter in that line (it writes that waiter's value in, with a new token for
// fenced) and tells only that waiter's process, so one release wakes one waiter wherever it is,
// after at most a cohort of holders of the releasing process in a row; with nobody waiting it
// deletes the lock. A lock whose holder died still passes on when it expires.
type valueLocker struct {
	rdb    redis.UniversalClient
	log    *slog.Logger
	line   *waitLine
	fenced bool
}

func newLua(d settings) (locker, error) {
	return &valueLocker{rdb: d.Data, log: d.Logger, line: newWaitLine(d.Data, d.Logger, false, d.InstanceID)}, nil
}

func newFenced(d settings) (locker, error) {
	if d.RFencedLayout {
		return newRFenced(d), nil
	}
	return &valueLocker{rdb: d.Data, log: d.Logger, fenced: true,
		line: newWaitLine(d.Data, d.Logger, true, d.InstanceID)}, nil
}

// inline: an acquisition may run in its caller's goroutine once the grant channel is subscribed
// (inliner); its line sends its commands through offload.
func (l *valueLocker) inline() bool { return l.line.subscribing() }

// Close ends the pub/sub connection of the waiters.
func (l *valueLocker) Close() error { return l.line.close() }

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

// Acquire waits in line until the lock is this acquisition's or the wait runs out. An explicit
// lease turns fenced's watchdog off, as Redisson's lock(lease) does.
func (l *valueLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	lease := opts.Lease
	value := l.line.newValue()
	token, ten, err := l.line.acquire(ctx, key, value, lease, opts.Wait)
	if err != nil {
		return nil, err
	}
	le := &valueLease{key: key, value: value, token: token, l: l, leaseMs: max(lease.Milliseconds(), 1), tenure: ten}
	if le.stale() {
		push := func(ctx context.Context) error {
			_, err := offload(ctx, func() (struct{}, error) { return struct{}{}, le.renewLease(ctx) })
			return err
		}
		if err := le.freshen(ctx, lease, push); err != nil {
			return nil, handedOverLate(ctx, key, err, le)
		}
	}
	if !l.fenced || opts.ExplicitLease {
		le.life.startUnwatched(ctx, lease, le.ttl, le.until, le)
		return le, nil
	}
	le.wd = &le.life
	le.life.start(ctx, lease, le.ttl, le.until, le, true, true, true)
	return le, nil
}

// valueLease is one held lock of a valueLocker.
type valueLease struct {
	key, value string
	l          *valueLocker
	leaseMs    int64
	wd         *life // &life with a watchdog, nil without one (NewLua, an explicit lease)
	life       life  // the lease's life, watched or not: Lost
	token      int64 // 0 for NewLua
	tenure
	gate releaseGate
}

func (l *valueLease) Key() string  { return l.key }
func (l *valueLease) Token() int64 { return l.token }

func (l *valueLease) Lost() <-chan struct{} { return l.life.Lost() }

// Renewals counts the watchdog's successful renewals.
func (l *valueLease) Renewals() int64 { return l.wd.Renewals() }

// releaseAfter stops the lease's life and, only while the key still holds our value, passes the
// lock on to the first waiter (with a new token for fenced) or deletes it, after the holder's
// pipeline p when there is one (runScript).
func (l *valueLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	var ours bool
	err := l.gate.release(ctx, p, l.key, l.life.Stop, func() (err error) {
		ours, err = l.l.line.release(ctx, p, l.key, l.value)
		return err
	})
	if err != nil {
		return err
	}
	if !ours {
		return fmt.Errorf("%w: %s had expired or passed to a newer holder%s", ErrNotHeld, l.key, l.tokenNote())
	}
	return nil
}

// keep is a round of the lease's watchdog, or the push of a lock handed over short (keeper).
func (l *valueLease) keep(ctx context.Context) (renewOutcome, error) {
	return outcome(l.renewLease(ctx))
}

// lost logs why the watchdog lost the lease (keeper).
func (l *valueLease) lost(why error) {
	l.l.log.Warn("fenced lock lost: renewal failed", "key", l.key, "token", l.token, "err", why)
}

// renewLease renews the lock to its lease, while the key still holds our value.
func (l *valueLease) renewLease(ctx context.Context) error {
	return renewValue(ctx, l.l.rdb, l.key, l.value, l.leaseMs)
}

// refresh pushes the lock's expiry out by the lease, while the key still holds our value.
func (l *valueLease) refresh(ctx context.Context) error {
	return l.life.refreshBy(ctx, l.wd != nil, func(ctx context.Context) error { return l.refreshOn(ctx, l.l.rdb) })
}

// refreshOn is refresh sent through s (one connection, for WithReplicas).
func (l *valueLease) refreshOn(ctx context.Context, s redis.Scripter) error {
	if l.gate.released() {
		return fmt.Errorf("%w: %s%s: this lease was released", ErrNotHeld, l.key, l.tokenNote())
	}
	return renewValue(ctx, s, l.key, l.value, l.leaseMs)
}

// tokenNote names the lease's token in an error, when it has one.
func (l *valueLease) tokenNote() string {
	if l.token == 0 {
		return ""
	}
	return fmt.Sprintf(" (token %d)", l.token)
}

// renewValue pushes a string lock's expiry out by leaseMs while it still holds value: ErrNotHeld
// when it does not.
func renewValue(ctx context.Context, rdb redis.Scripter, key, value string, leaseMs int64) error {
	return renewReply(key, run(ctx, rdb, script.FencedRenewCall(key, value, leaseMs)), func() error {
		return fmt.Errorf("%w: %s had expired or passed to a newer holder", ErrNotHeld, key)
	})
}
