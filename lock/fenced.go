package lock

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/fenced_acquire.lua
	fencedAcquireLua string
	//go:embed lua/fenced_renew.lua
	fencedRenewLua string
	//go:embed lua/fenced_release.lua
	fencedReleaseLua string

	fencedAcquire = redis.NewScript(fencedAcquireLua)
	fencedRenew   = redis.NewScript(fencedRenewLua)
	fencedRelease = redis.NewScript(fencedReleaseLua)
)

// fencedLocker is mode fenced (Redisson RFencedLock, in its layout; Kleppmann's fencing tokens):
// the take of RLock's hash and INCR of a token counter in one script, so every acquisition
// carries a strictly increasing token; a watchdog renews the lease every lease/3 while held. A lease alone cannot stop a holder
// that was paused past its expiry from writing afterwards; the token can: the store accepts a
// write only if no newer token has been written (store/lua/commit.lua), so a stale holder's write
// is rejected instead of overwriting a newer holder's.
//
// Waiters do not poll: the release PUBLISHes on the key's channel, and the waiters of this
// process wait in line (handoff.go) until that message or the holder's PTTL (returned by the
// failed acquire script), as in mode lua.
type fencedLocker struct {
	rdb   redis.UniversalClient
	lease time.Duration
	log   *slog.Logger
	sub   *subscriber
	line  *handoff
	// id names this Locker in its holders' hash fields ("<id>:<acquisition>", as Redisson's
	// "<client-id>:<thread>"): the instance ID when one was given. Its releases ring its line
	// directly and announce themselves with Redisson's unlock message for everyone else, which
	// rings its own line a second time (a spurious wake-up costs one attempt, never exclusion).
	id string
}

func newFenced(d settings) (locker, error) {
	l := &fencedLocker{rdb: d.Data, lease: cmp.Or(d.Lease, DefaultLease), log: logOf(d), id: cmp.Or(d.InstanceID, uuid.NewString())}
	l.sub, l.line = newSubscribedLine(d.Data, l.log, func(payload string) bool { return payload != l.id }, true)
	l.sub.mode = newPubsubMode(d.Data, d.Subscription)
	return l, nil
}

// Close ends the pub/sub connection of the waiters.
func (l *fencedLocker) Close() error {
	l.line.close()
	return l.sub.Close()
}

func (l *fencedLocker) Name() string { return "fenced" }

// fencedTokenKey is the token counter of a fenced lock key, RFencedLock's
// "redisson_lock_token:{<name>}"; it hashes like the key, so the acquire script stays in one
// slot. It has no TTL: tokens must keep increasing across holders.
func fencedTokenKey(key string) string { return redissonPrefixed("redisson_lock_token", key) }

// fencedKeys are the acquire script's keys: the lock, its counter and, where it shares their
// slot, the counter of the layout before RFencedLock's ("<key>:token"), which the first
// acquisition moves into the new one.
func fencedKeys(rdb redis.UniversalClient, key string) []string {
	keys := []string{key, fencedTokenKey(key)}
	if _, cluster := rdb.(*redis.ClusterClient); !cluster || strings.Contains(key, "{") {
		keys = append(keys, key+":token")
	}
	return keys
}

// Acquire runs the acquire script until it holds the lock or the wait runs out, waiting in
// line between attempts like the lua mode. An explicit lease turns the watchdog off, as
// Redisson's lock(lease) does.
func (l *fencedLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	lease := leaseOrDefault(opts, l.lease)
	leaseMs := max(lease.Milliseconds(), 1)
	value := l.id + ":" + uuid.NewString() // the hash field, as Redisson's "<client-id>:<thread>"
	var token int64
	try := func(ctx context.Context) (bool, time.Duration, error) {
		r, err := fencedAcquire.Run(ctx, l.rdb, fencedKeys(l.rdb, key), value, leaseMs).Int64Slice()
		if err != nil {
			return false, 0, redisErr("fenced acquire "+key, err)
		}
		if len(r) != 2 {
			return false, 0, fmt.Errorf("lock: fenced acquire %s: unexpected reply %v", key, r)
		}
		if r[0] > 0 {
			token = r[0]
			return true, 0, nil
		}
		return false, holderTTL(r[1]), nil
	}
	if err := l.line.obtain(ctx, key, opts.Wait, lease, false, try); err != nil {
		return nil, err
	}
	fl := &fencedLease{key: key, value: value, token: token, rdb: l.rdb, l: l, leaseMs: leaseMs}
	if !opts.ExplicitLease {
		fl.wd = startWatchdog(ctx, max(lease/3, time.Millisecond), func(ctx context.Context) (renewOutcome, error) {
			return outcome(renewHash(ctx, l.rdb, key, value, leaseMs))
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
	gate       releaseGate
}

func (l *fencedLease) Key() string  { return l.key }
func (l *fencedLease) Token() int64 { return l.token }

func (l *fencedLease) Lost() <-chan struct{} { return l.wd.Lost() }

// Renewals counts the watchdog's successful renewals.
func (l *fencedLease) Renewals() int64 { return l.wd.Renewals() }

// Release stops the watchdog and deletes the key only while it still holds our value.
func (l *fencedLease) Release(ctx context.Context) error {
	first, ok := l.gate.begin()
	if !ok {
		return fmt.Errorf("%w: %s (token %d) was already released", ErrNotHeld, l.key, l.token)
	}
	if first {
		l.wd.Stop()
	}
	n, err := l.l.sub.mode.script(ctx, fencedRelease).Run(ctx, l.rdb, []string{l.key, unlockChannel(l.key)}, l.value, unlockMessage).Int()
	l.l.line.ring(l.key) // the waiters of this process, at once
	if err != nil {
		return l.gate.end(redisErr("compare-and-delete "+l.key, err))
	}
	l.gate.end(nil)
	if n == 0 {
		return fmt.Errorf("%w: %s (token %d) had expired or passed to a newer holder", ErrNotHeld, l.key, l.token)
	}
	return nil
}

// refresh pushes the lock's expiry out by the lease, while the key still holds our value.
func (l *fencedLease) refresh(ctx context.Context) error {
	return renewHash(ctx, l.rdb, l.key, l.value, l.leaseMs)
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
