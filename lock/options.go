// Options: what a Locker is built from (settings), the With… options that set it, and the
// defaults. Which constructor honours which option is each constructor's kindSpec (new.go).

package lock

import (
	"log/slog"
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

// settings are what a Locker is built from: its clients and the constructor's Options applied
// over the defaults.
type settings struct {
	// Data is the one Redis of the single-server locks.
	Data redis.UniversalClient
	// Masters are the independent masters of the multilock and Redlock.
	Masters []redis.UniversalClient
	// InstanceID identifies this process, like the UUID of a Redisson client.
	InstanceID string
	// Lease is the default lease: the watchdog timeout.
	Lease time.Duration
	// WaitReplicas, when above 0, makes the reentrant lock WAIT for that many replicas to
	// acknowledge each acquisition, within WaitReplicasTimeout (see reentrant_sync.go).
	WaitReplicas        int
	WaitReplicasTimeout time.Duration
	Logger              *slog.Logger
	// DriftFactor is Redlock's clock-drift allowance.
	DriftFactor float64
	// RetryMin..RetryMax is the random pause between attempts where no release will wake a
	// waiter (0: each lock's default; see WithRetryDelay).
	RetryMin, RetryMax time.Duration
	// Fencing makes Redlock draw a fencing token for every acquisition (WithFencingTokens).
	Fencing bool
	// Subscription chooses classic or sharded pub/sub for the reentrant and fair locks
	// (WithShardedPubSub; interop.go).
	Subscription subMode
	// ThreadWait is the fair lock's thread wait (WithThreadWait); 0: each acquisition's wait.
	ThreadWait time.Duration
	// RFencedLayout keeps NewFenced's lock in Redisson RFencedLock's layout
	// (WithRFencedLockLayout; rfenced.go).
	RFencedLayout bool
	// given are the options given, in order: apply sets those the kind honours.
	given []givenOption
	// optional is set while an Option made by Option.Optional is given.
	optional bool
}

// givenOption is one option given: its name, whether it was given as Option.Optional, and what
// it sets.
type givenOption struct {
	name     string
	optional bool
	set      func(*settings)
}

// option is the Option called name: giving it records set, for apply to run if the kind honours
// it.
func option(name string, set func(*settings)) Option {
	return func(o *settings) { o.given = append(o.given, givenOption{name: name, optional: o.optional, set: set}) }
}

// Optional returns o for a constructor to take when it honours it and to leave out when it does
// not, where it would otherwise refuse it: one list of options (a program's configuration) can
// then be given to every constructor, and each takes what applies to its kind.
func (o Option) Optional() Option {
	if o == nil {
		return nil
	}
	return func(s *settings) {
		was := s.optional
		s.optional = true
		o(s)
		s.optional = was
	}
}

// kindSpec is what a constructor honours: the options that mean something to it (given the
// settings: NewFenced honours Redisson's options only in RFencedLock's layout) and whether
// Options.Owner does.
type kindSpec struct {
	name    string
	options func(d settings) []string
	owners  func(d settings) bool
	newMode func(settings) (locker, error)
}

// common are the options every constructor honours.
var common = []string{"WithLease", "WithLogger", "WithInstanceID"}

// WithLease sets the default lease, used when an acquisition does not give its own
// (Options.Lease). Default 30 s (Redisson's lockWatchdogTimeout). In the modes with a watchdog
// (reentrant, fair, multilock, redlock, fenced) it is also the watchdog timeout: a held lock is
// renewed every lease/3 until it is released, and a holder that dies leaves it to expire one
// lease later.
func WithLease(d time.Duration) Option {
	return option("WithLease", func(o *settings) { o.Lease = d })
}

// WithInstanceID names this process in what its locks write to Redis, like the UUID of a
// Redisson client: the reentrant, fair and multilock locks (and NewFenced in RFencedLock's layout)
// store a holder as the hash field "<instance-id>:<owner>"; the others start each lock's value
// with it (followed by a random part, so two Lockers given one id still never share a value).
// Give every process its own. Default: a random UUID for each Locker.
func WithInstanceID(id string) Option {
	return option("WithInstanceID", func(o *settings) { o.InstanceID = id })
}

// WithLogger receives the lock's own troubles (lost subscriptions, failed renewals). Default:
// discarded.
func WithLogger(l *slog.Logger) Option {
	return option("WithLogger", func(o *settings) { o.Logger = l })
}

// WithDriftFactor sets redlock's clock-drift allowance as a fraction of the lease. Default
// 0.01. The other constructors refuse it.
func WithDriftFactor(f float64) Option {
	return option("WithDriftFactor", func(o *settings) { o.DriftFactor = f })
}

// WithFencingTokens makes NewRedlock's leases carry a fencing token (Lease.Token): a counter
// kept on the masters beside the lock, read on a majority and raised on a majority after each
// win, so a later holder's token is always larger, even when an earlier holder's lock expired
// early on some master (a pause, a clock jump). The protected resource must refuse a write whose
// token is older than the newest it has seen. It costs two more round trips to the masters per
// acquisition, and it does not survive a master that restarts without its data. The other
// constructors refuse it (NewFenced has its own token).
func WithFencingTokens() Option {
	return option("WithFencingTokens", func(o *settings) { o.Fencing = true })
}

// WithRetryDelay sets the random pause between two attempts where no release will wake the
// waiter: a master that answered with an error, such as OOM or too many clients (multilock;
// default 50–150 ms), or a split vote among the masters (redlock; default 1–10 ms). A master that
// refuses connections, is loading or is down is not this pause's: every kind tries again,
// backing off from 10 ms to 200 ms, until the wait ends, and then fails with ErrUnavailable.
// Waiters for a lock that is held do not poll: a release wakes them (a redlock waiter also sleeps
// until a quorum of the holder's keys would expire). The other constructors refuse it.
func WithRetryDelay(lo, hi time.Duration) Option {
	return option("WithRetryDelay", func(o *settings) { o.RetryMin, o.RetryMax = lo, hi })
}

// retryOr is the retry delay of d, or lo..hi where none was set.
func retryOr(d settings, lo, hi time.Duration) func() time.Duration {
	if d.RetryMax > 0 {
		return jitter(d.RetryMin, d.RetryMax)
	}
	return jitter(lo, hi)
}

// WithReplicas makes every lock on one server (NewLua, NewReentrant, NewFair, NewFenced) wait,
// after each acquisition, until n replicas of its Redis have acknowledged it (WAIT), within
// timeout (0: 1 s, Redisson's slavesSyncTimeout). Fewer acknowledgements undo the acquisition
// with ErrNotReplicated, so a failover to a replica that acknowledged the lock cannot hand it to a
// second holder. WAIT is not consensus: Sentinel may still promote a replica that had not
// acknowledged (n smaller than the replicas). Renewals are not waited for. Default 0: no wait.
// NewMultilock and NewRedlock refuse it: their masters are independent, without replicas.
func WithReplicas(n int, timeout time.Duration) Option {
	return option("WithReplicas", func(o *settings) { o.WaitReplicas, o.WaitReplicasTimeout = n, timeout })
}

// WithRFencedLockLayout makes NewFenced keep its lock in the layout of Redisson's RFencedLock,
// so Java services calling getFencedLock(name) share it: the lock is NewReentrant's hash (with
// its owners, re-entry and watchdog), its tokens come from Redisson's counter
// "redisson_lock_token:{<key>}", raised by every acquisition, re-entries included, and a release
// wakes waiters with Redisson's unlock message (sharded as WithShardedPubSub says). Both sides
// then exclude each other and draw from one counter. What it costs: a release wakes the head
// waiter of every process waiting for the lock, which all try again and all but one fail, where
// the default layout hands the lock to one waiter. When the default layout's counter
// "<key>:token" exists (and, on a cluster, shares the key's hash tag), tokens are drawn above it
// and written back into it, so a switch of layout never draws a token already used (a key that
// never used the default layout has no such counter: switching it to the default needs both
// counters deleted together with the resource's record of the newest token). Every process
// sharing a lock must use the same layout: one of the other layout fails with a Redis error while
// the lock is held (WRONGTYPE), never takes it. Default: off. The other constructors refuse it.
func WithRFencedLockLayout() Option {
	return option("WithRFencedLockLayout", func(o *settings) { o.RFencedLayout = true })
}

// WithShardedPubSub forces how NewReentrant, NewFair and NewFenced announce a release and wait
// for one, as Redisson's shardedSubscriptionMode does: true, SPUBLISH and SSUBSCRIBE (Redis 7
// and later; on a cluster one subscription per node, moved with the slots); false, PUBLISH and
// SUBSCRIBE. Default (the option not given): sharded when the client is a *redis.ClusterClient
// whose servers know sharded pub/sub, classic otherwise; that is Redisson's AUTO, so on a
// cluster both sides pick alike. Processes sharing a lock must use the same kind, or each side's
// waiters sleep out the other's holders. The other constructors refuse it, and so does NewFenced
// in its default layout (they always use classic pub/sub).
func WithShardedPubSub(on bool) Option {
	return option("WithShardedPubSub", func(o *settings) {
		o.Subscription = subClassic
		if on {
			o.Subscription = subSharded
		}
	})
}

// WithThreadWait sets NewFair's thread wait: how long a waiter may stay first in the queue
// without coming for the lock before the next acquire or release drops it as dead, and how far
// every waiter's deadline moves up when one takes the lock. Default 0: each acquisition's own
// Options.Wait, as Redisson's tryLock(wait, …). When Java Redisson clients share a fair lock, set
// it to their thread wait: their config's fairLockWaitTimeout (5 min by default) when they call
// lock(), or the wait they give tryLock. With unequal thread waits, an acquisition by the side
// with the longer one moves the other side's deadlines into the past: its live waiters are
// dropped from the queue, join it again at the tail and lose their place (never the lock, and
// there are never two holders). Set, it also makes the fair lock's scripts write every waiter's
// deadline each time one takes the lock, exactly as RFairLock's do, one write per waiter; unset,
// only the first waiter's deadline is written and the others owe their move-up until it adds up
// to a day, far less Redis time per acquisition with a long queue but exact only while this
// library's scripts alone change the queue; and the queue's keys live until the last waiter's
// chained deadline, not just until the last waiter's own wait ends. The other constructors
// refuse it.
func WithThreadWait(d time.Duration) Option {
	return option("WithThreadWait", func(o *settings) { o.ThreadWait = d })
}

// logOf is d's logger, or the default, one that discards (apply gives every Locker its result).
func logOf(d settings) *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}
