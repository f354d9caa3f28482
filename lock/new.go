package lock

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// construct applies opts over the defaults (apply), checks the result and builds the kind from
// it.
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
	d, err := apply(k, d, opts)
	if err != nil {
		return nil, err
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
	impl, err := k.newMode(d)
	if err != nil {
		return nil, err
	}
	var extra time.Duration
	if d.WaitReplicas > 0 {
		extra = d.WaitReplicasTimeout
	}
	closing, closeFn := context.WithCancelCause(context.Background())
	l := &Locker{impl: impl, kind: name, extra: extra, lease: d.Lease, owners: k.owners != nil && k.owners(d),
		closing: closing, close: closeFn, crew: newCrew(closing)}
	if rl, ok := impl.(*reentrantLocker); !ok || rl.sync == nil {
		// NewReentrant waits for replicas inside its acquire (reentrant_sync.go).
		l.replicas, l.data = newReplicaSync(d), d.Data
	}
	return l, nil
}

// apply sets the defaults, the one place they are applied, then the options given over them: an
// option the kind does not honour is an error, unless it was given as Option.Optional (then it is
// left out).
func apply(k kindSpec, base settings, opts []Option) (settings, error) {
	base.Lease = defaultLease
	base.DriftFactor = defaultDriftFactor
	var given settings
	for _, o := range opts {
		if o != nil {
			o(&given)
		}
	}
	// What a kind honours depends only on options it always honours (NewFenced's layout), so
	// every option given, set once, tells it.
	probe := base
	for _, g := range given.given {
		g.set(&probe)
	}
	honoured := append(slices.Clone(common), k.options(probe)...)
	d := base
	for _, g := range given.given {
		switch {
		case slices.Contains(honoured, g.name):
			g.set(&d)
		case !g.optional:
			return d, fmt.Errorf("lock: %s: option %s does not apply to New%s (it honours %s)", k.name, g.name, constructorOf(k.name), strings.Join(honoured, ", "))
		}
	}
	if d.WaitReplicas > 0 && d.WaitReplicasTimeout == 0 {
		d.WaitReplicasTimeout = defaultWaitReplicasTimeout
	}
	d.Logger = logOf(d)
	return d, nil
}

// constructorOf is the constructor's name after New for a kind's name.
func constructorOf(name string) string { return strings.ToUpper(name[:1]) + name[1:] }

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
// that outlives its lease loses the lock (Lost closes when the lease runs out by this process's
// clock), so keep the critical section well under the lease or call Lease.Refresh. Waiters in this process wait in line and are woken by the
// release; those in other processes by its PUBLISH.
func NewLua(rdb redis.UniversalClient, opts ...Option) (*Locker, error) {
	return construct(kindSpec{name: "lua", options: fixed("WithReplicas"), newMode: newLua}, settings{Data: rdb}, opts)
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
		options: fixed("WithReplicas", "WithShardedPubSub", "WithThreadWait")}, settings{Data: rdb}, opts)
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
				return []string{"WithRFencedLockLayout", "WithReplicas", "WithShardedPubSub"}
			}
			return []string{"WithRFencedLockLayout", "WithReplicas"}
		}}, settings{Data: rdb}, opts)
}

// NewMultilock returns Redisson's MultiLock: a reentrant lock on every one of masters
// (independent Redis servers), all of them required. A master that is down is tried again
// within the wait; when the wait ends that way (or a master does not answer) the acquisition
// fails with ErrUnavailable, with nothing left locked on the others.
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

// fixed and yes describe what a kind honours (kindSpec).
func fixed(names ...string) func(settings) []string {
	return func(settings) []string { return names }
}

func yes(settings) bool { return true }
