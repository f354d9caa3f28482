package lock

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// defaultLease is how long a lock lives in Redis without renewal: Redisson's
// lockWatchdogTimeout. A lock with a watchdog renews a held lock every defaultLease/3.
const defaultLease = 30 * time.Second

// defaultDriftFactor is Redlock's allowance for clock drift, as a fraction of the lease
// (redsync's default): validity = lease − time taken to acquire − (lease × factor + 2 ms).
const defaultDriftFactor = 0.01

// Option configures a Locker. A nil Option is ignored.
type Option func(*settings)

// WithLease sets the default lease, used when an acquisition does not give its own
// (Options.Lease). Default 30 s (Redisson's lockWatchdogTimeout). In the modes with a watchdog
// (reentrant, multilock, redlock, fenced) it is also the watchdog timeout: a held lock is
// renewed every lease/3 until it is released, and a holder that dies leaves it to expire one
// lease later.
func WithLease(d time.Duration) Option {
	return func(o *settings) { o.Lease = d; o.mark("WithLease") }
}

// WithInstanceID names this process in what its locks write to Redis, like the UUID of a
// Redisson client: the reentrant, fair and multilock locks (and NewFenced in RFencedLock's layout)
// store a holder as the hash field "<instance-id>:<owner>"; the others start each lock's value
// with it (followed by a random part, so two Lockers given one id still never share a value).
// Give every process its own. Default: a random UUID for each Locker.
func WithInstanceID(id string) Option {
	return func(o *settings) { o.InstanceID = id; o.mark("WithInstanceID") }
}

// WithLogger receives the lock's own troubles (lost subscriptions, failed renewals). Default:
// discarded.
func WithLogger(l *slog.Logger) Option {
	return func(o *settings) { o.Logger = l; o.mark("WithLogger") }
}

// WithDriftFactor sets redlock's clock-drift allowance as a fraction of the lease. Default
// 0.01. The other constructors refuse it.
func WithDriftFactor(f float64) Option {
	return func(o *settings) { o.DriftFactor = f; o.mark("WithDriftFactor") }
}

// WithFencingTokens makes NewRedlock's leases carry a fencing token (Lease.Token): a counter
// kept on the masters beside the lock, read on a majority and raised on a majority after each
// win, so a later holder's token is always larger, even when an earlier holder's lock expired
// early on some master (a pause, a clock jump). The protected resource must refuse a write whose
// token is older than the newest it has seen. It costs two more round trips to the masters per
// acquisition, and it does not survive a master that restarts without its data. The other
// constructors refuse it (NewFenced has its own token).
func WithFencingTokens() Option {
	return func(o *settings) { o.Fencing = true; o.mark("WithFencingTokens") }
}

// WithRetryDelay sets the random pause between two attempts where no release will wake the
// waiter: a master that did not answer (multilock; default 50–150 ms) or a split vote among the
// masters (redlock; default 1–10 ms). Waiters for a lock that is held do not poll: a release wakes
// them (a redlock waiter also sleeps until a quorum of the holder's keys would expire). The other constructors refuse it.
func WithRetryDelay(lo, hi time.Duration) Option {
	return func(o *settings) { o.RetryMin, o.RetryMax = lo, hi; o.mark("WithRetryDelay") }
}

// construct applies opts over the defaults, checks the result (an option the kind would ignore is
// an error) and builds the kind from it.
func construct(k kindSpec, d settings, opts []Option) (*Locker, error) {
	name := k.name
	if isNil(d.Data) && len(d.Masters) == 0 {
		return nil, fmt.Errorf("lock: %s: %w: no Redis client", name, ErrUnavailable)
	}
	for i, m := range d.Masters {
		if isNil(m) {
			return nil, fmt.Errorf("lock: %s: %w: master %d is a nil client", name, ErrUnavailable, i+1)
		}
	}
	d.Lease = defaultLease
	d.DriftFactor = defaultDriftFactor
	for _, o := range opts {
		if o != nil {
			o(&d)
		}
	}
	honoured := append(slices.Clone(common), k.options(d)...)
	for _, g := range d.given {
		if !slices.Contains(honoured, g) {
			return nil, fmt.Errorf("lock: %s: option %s does not apply to New%s (it honours %s)", name, g, constructorOf(name), strings.Join(honoured, ", "))
		}
	}
	switch {
	case d.Lease <= 0:
		return nil, fmt.Errorf("lock: %s: lease %s: want above 0", name, d.Lease)
	case d.DriftFactor < 0 || d.DriftFactor >= 0.5:
		return nil, fmt.Errorf("lock: %s: drift factor %g: want 0 <= f < 0.5", name, d.DriftFactor)
	case d.RetryMin < 0 || d.RetryMax < d.RetryMin:
		return nil, fmt.Errorf("lock: %s: retry delay %s..%s: want 0 <= min <= max", name, d.RetryMin, d.RetryMax)
	case d.WaitReplicas < 0 || d.WaitReplicasTimeout < 0:
		return nil, fmt.Errorf("lock: %s: replicas %d within %s: want 0 or above", name, d.WaitReplicas, d.WaitReplicasTimeout)
	case d.ThreadWait < 0:
		return nil, fmt.Errorf("lock: %s: thread wait %s: want 0 (each acquisition's wait) or above", name, d.ThreadWait)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	impl, err := k.newMode(d)
	if err != nil {
		return nil, err
	}
	var extra time.Duration
	if d.WaitReplicas > 0 {
		extra = cmp.Or(d.WaitReplicasTimeout, defaultWaitReplicasTimeout)
	}
	closing, closeFn := context.WithCancelCause(context.Background())
	return &Locker{impl: impl, kind: name, extra: extra, lease: d.Lease, owners: k.owners != nil && k.owners(d),
		closing: closing, close: closeFn}, nil
}

// constructorOf is the constructor's name after New for a kind's name.
func constructorOf(name string) string {
	switch name {
	case "lua":
		return "Lua"
	case "multilock":
		return "Multilock"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// isNil reports whether c is no client at all: nil, or a nil pointer in the interface.
func isNil(c redis.UniversalClient) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// NewLua returns a lock on one Redis: SET NX PX with a random value, released by a Lua
// compare-and-delete, so a holder never deletes another's lock. It has no watchdog: a holder
// that outlives its lease loses the lock (and Lost is never closed), so keep the critical
// section well under the lease. Waiters in this process wait in line and are woken by the
// release; those in other processes by its PUBLISH.
func NewLua(rdb redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "lua", options: none, newMode: newLua}, settings{Data: rdb}, opts)
}

// NewReentrant returns Redisson's RLock on one Redis, wire-compatible with Redisson's
// RedissonLock: a hash whose field "<instance-id>:<owner>" counts the holds of one owner
// (Options.Owner), renewed by a watchdog every lease/3 while held (unless Options.ExplicitLease),
// waiters woken by the release's PUBLISH on redisson_lock__channel:{key}.
func NewReentrant(rdb redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "reentrant", newMode: newReentrant, owners: yes,
		options: fixed("WithReplicas", "WithShardedPubSub")}, settings{Data: rdb}, opts)
}

// NewFair returns Redisson's RFairLock on one Redis, wire-compatible with Redisson's
// RedissonFairLock: the reentrant lock's hash and watchdog, plus a queue in Redis
// (redisson_lock_queue:{key}, with the waiters' deadlines in redisson_lock_timeout:{key}) that
// serves waiters in the order they queued, across every process. Each waiter is told its turn
// on its own channel, redisson_lock__channel:{key}:<instance-id>:<owner>. A waiter that dies
// while queued holds the line up until its deadline: the deadline of the waiter before it (or the
// holder's TTL when it queued) plus its thread wait (WithThreadWait; default its Options.Wait).
// The queue's keys expire when the last waiter has given up by its own Options.Wait; with
// WithThreadWait (Java clients on the queue count on the chain), at the last waiter's deadline.
func NewFair(rdb redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "fair", newMode: newFair, owners: yes,
		options: fixed("WithShardedPubSub", "WithThreadWait")}, settings{Data: rdb}, opts)
}

// NewFenced returns a lock on one Redis whose every acquisition carries a fencing token
// (Lease.Token) larger than any before it on the same key. The protected resource must refuse
// a write whose token is older than the newest it has seen: that, not the lock, is what stops a
// holder that was paused past its lease. Renewed by a watchdog while held.
//
// The tokens come from a counter kept beside the lock, "<key>:token" (on a cluster, for a key
// without a hash tag, "{<key>}:token", in the key's slot), which has no TTL on
// purpose: were it to expire, the next
// holder would draw a token the resource has already seen and its writes would be refused, or
// worse, an older holder's accepted. It is one small string per lock key; delete it only
// together with the resource's record of the newest token.
//
// Waiters wait in one line across processes, and a release hands the lock to the first of them.
// WithRFencedLockLayout keeps the lock in Redisson RFencedLock's layout instead, to share it with
// Java services.
func NewFenced(rdb redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "fenced", newMode: newFenced,
		owners: func(d settings) bool { return d.RFencedLayout },
		options: func(d settings) []string {
			if d.RFencedLayout {
				return []string{"WithRFencedLockLayout", "WithShardedPubSub"}
			}
			return []string{"WithRFencedLockLayout"}
		}}, settings{Data: rdb}, opts)
}

// NewMultilock returns Redisson's MultiLock: a reentrant lock on every one of masters
// (independent Redis servers), all of them required. A master that does not answer makes the
// acquisition fail with ErrUnavailable within its wait, with nothing left locked on the others.
func NewMultilock(masters []redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "multilock", newMode: newMultilock, owners: yes,
		options: fixed("WithRetryDelay")}, settings{Masters: masters}, opts)
}

// NewRedlock returns a Redlock over masters (independent Redis servers, 3 or 5) built on
// redsync: a majority must grant the lock within its validity (lease − time taken − drift);
// a failed attempt deletes its value everywhere. Renewed every lease/3 while held; when the
// renewal cannot reach a majority, or the validity runs out first, Lost is closed. Errors name
// the masters that failed.
func NewRedlock(masters []redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "redlock", newMode: newRedlock,
		options: fixed("WithDriftFactor", "WithRetryDelay", "WithFencingTokens")}, settings{Masters: masters}, opts)
}

// none, fixed and yes describe what a kind honours (kindSpec).
func none(settings) []string { return nil }

func fixed(names ...string) func(settings) []string {
	return func(settings) []string { return names }
}

func yes(settings) bool { return true }

// retryOr is the retry delay of d, or lo..hi where none was set.
func retryOr(d settings, lo, hi time.Duration) func() time.Duration {
	if d.RetryMax > 0 {
		return jitter(d.RetryMin, d.RetryMax)
	}
	return jitter(lo, hi)
}

// WithReplicas makes NewReentrant wait, after each acquisition, until n replicas of its Redis
// have acknowledged it (WAIT), within timeout (0: 1 s). Fewer acknowledgements undo the
// acquisition with ErrNotReplicated, so a failover to a replica that never saw the lock cannot
// hand it to a second holder. Default 0: no wait. The other constructors refuse it.
func WithReplicas(n int, timeout time.Duration) Option {
	return func(o *settings) { o.WaitReplicas, o.WaitReplicasTimeout = n, timeout; o.mark("WithReplicas") }
}
