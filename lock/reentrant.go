package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// reentrantLocker is NewReentrant (Redisson's RedissonLock, https://github.com/redisson/redisson): RLock,
// wire-compatible, so a Java service calling getLock(name) on the same Redis excludes with this
// one. The lock is a hash; its field "<instance-id>:<owner>" holds the hold count, so the same
// owner re-enters and must release as often. Without an explicit lease a watchdog renews the lock
// every lease/3 while it is held, so business time longer than the lease is safe, and a crashed
// holder's lock still expires one lease later. Waiters sleep until the holder's unlock message
// or the holder's PTTL, never on a fixed poll interval; within this process they wait in a queue
// (handoff.go), so a release wakes one of them and none is overtaken. Across processes the release
// names one process in a line kept beside Redisson's keys, and only that one's waiter tries
// (nomination.go); a Redisson client's release names nobody and wakes them all, as in Redisson.
// The commands it sends and what their replies mean are its core.Hold's (core.RLock); the same
// driver on core.ReadSide and core.WriteSide is each side of NewReadWrite (readwrite.go).
// What a Redisson client on the same lock sees, beside waiting.go's rules:
//
//   - R1. The lock is Redisson's: nothing of this library's waiting writes the lock hash, and
//     every release deletes it and publishes Redisson's unlock message wherever a Redisson waiter
//     may listen. This library's processes listen by pattern, which PUBSUB NUMSUB leaves out, so
//     among them alone the nomination (N2) goes out without it. Checked by
//     TestNominationUnlockMessageOnlyWhereRedissonListens, TestReentrantRedissonLayout and
//     TestReentrantExcludesWithJavaRedisson.
//   - R2. A Redisson client's waiters wake on every release and race whoever tries. An unlock
//     message that names nobody rings every process's queue, and every head tries. The layouts in
//     no line (RFencedLock's, a multilock's parts) always work that way. Checked by
//     TestNominationRedissonReleaseWakesEveryone and TestRFencedLayoutWakesTheOtherSide.
type reentrantLocker struct {
	name  string
	rdb   redis.UniversalClient
	id    string
	log   *slog.Logger
	hold  core.Hold // core.RLock, or a side of Redisson's RReadWriteLock (readwrite.go)
	sub   *subscriber
	queue *handoff

	// sync, when set, waits for replicas to acknowledge each acquisition (reentrant_sync.go).
	sync *replicaSync
	// fenced: NewFenced in RFencedLock's layout, every acquisition draws a token (rfenced.go).
	fenced bool
	// nom, when set, sends one process's head to try on a release, not every one (nomination.go).
	nom *nominator

	// mu guards entries and holds. The two sides of a read-write lock share mu and holds: an
	// owner's re-entry or downgrade tries at once, whichever side it holds here.
	mu      *sync.Mutex
	entries map[string]*renewal // key NUL field -> its shared watchdog
	holds   holdCount           // key NUL field -> leases this process holds (re-entry skips the queue)
}

// renewal is Redisson's ExpirationEntry: one watchdog per (lock, owner), shared by the owner's
// nested acquisitions and stopped when the last of them is released.
type renewal struct {
	wd    *life // &own
	own   life
	holds int // guarded by reentrantLocker.mu
	// What the watchdog renews: the hold of ask; id is the entry's in l.entries.
	l   *reentrantLocker
	ask core.Ask
	id  string
}

// keep is a round of the owner's watchdog (keeper).
func (e *renewal) keep(ctx context.Context) (renewOutcome, error) {
	return outcome(e.l.renew(ctx, e.l.rdb, e.ask))
}

// lost logs why the watchdog lost the lock and forgets the entry (keeper).
func (e *renewal) lost(why error) {
	e.l.log.Warn("watchdog: lock lost", "lock", e.l.name, "key", e.ask.Key, "field", e.l.hold.Field(e.ask), "err", why)
	e.l.forget(e.id, e)
}

// newReentrantOn builds a reentrant Locker on rdb; with line, in the line across processes
// (nomination.go), else woken by Redisson's unlock message alone.
func newReentrantOn(name string, rdb redis.UniversalClient, d settings, mode *pubsubMode, line bool) *reentrantLocker {
	if !line {
		sub, queue := newChannelQueue(rdb, d.Logger, mode, core.RLock)
		return newHashLocker(name, rdb, d, core.RLock, instanceID(d), &sync.Mutex{}, holdCount{}, sub, queue)
	}
	nom := newNominator(rdb, d.Logger, mode)
	l := newHashLocker(name, rdb, d, core.RLock, instanceID(d), &sync.Mutex{}, holdCount{}, nom.sub, nom.queue)
	l.nom = nom
	return l
}

// newHashLocker is a Locker of Redisson's hash layout taken by hold, under instance id, whose
// waiters wait in queue, woken through sub; mu and holds are its own, or shared with the other
// side of a read-write lock.
func newHashLocker(name string, rdb redis.UniversalClient, d settings, hold core.Hold, id string, mu *sync.Mutex,
	holds holdCount, sub *subscriber, queue *handoff) *reentrantLocker {
	return &reentrantLocker{name: name, rdb: rdb, id: id, log: d.Logger, hold: hold, sub: sub, queue: queue,
		mu: mu, entries: map[string]*renewal{}, holds: holds}
}

// instanceID is d's instance id, or a new one.
func instanceID(d settings) string {
	if d.InstanceID != "" {
		return d.InstanceID
	}
	return uuid.NewString()
}

func newReentrant(d settings) (locker, error) {
	// It waits for replicas on the connection of its acquire script; the other single-server
	// kinds after their acquire (Locker.replicas); multilock's independent masters have none.
	l := newReentrantOn("reentrant", d.Data, d, newPubsubMode(d.Data, d.Subscription), true)
	l.sync = newReplicaSync(d)
	return l, nil
}

// Acquire takes the lock for opts.Owner (a fresh owner when there is none).
func (l *reentrantLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	return l.acquire(ctx, key, opts)
}

func (l *reentrantLocker) acquire(ctx context.Context, key string, opts Options) (*reentrantLease, error) {
	field := l.id + ":" + ownerOf(opts)
	ask := core.Ask{Key: key, Field: field, Lease: opts.Lease}

	// A re-entry by an owner that holds the lock here already goes straight to Redis. Otherwise
	// wait in this process's queue for the key; the head subscribes to the unlock channel before
	// it tries again, as Redisson does, so a release after its failed try is sure to wake it.
	var token int64
	deadline := time.Now().Add(opts.Wait)
	// An unanswered re-entry may or may not have counted a hold in Redis: it is not given back
	// (orphan.go), as that could end the owner's other hold.
	l.mu.Lock()
	reentry := l.holds.has(key + "\x00" + field)
	l.mu.Unlock()
	// A waiter queues its process in the line across processes when its attempt fails
	// (nomination.go).
	if l.nom != nil && opts.Wait > 0 {
		ask.Line, ask.Until = l.nom.id, deadline
	}
	err := l.queue.obtain(ctx, key, "", opts.Wait, core.WinnerHint(l.hold, opts.Lease), reentry, func(ctx context.Context) (bool, time.Duration, error) {
		held, ttl, tok, err := l.try(ctx, ask)
		token = tok
		if !reentry {
			l.orphaned(ctx, err, ask)
		}
		if err == nil && !held && ask.Line != "" {
			ttl = core.QueuedSleep(ttl, l.nom.lostGrant) // nomination.go's rule N3
		}
		return held, ttl, err
	})
	if err != nil {
		if ask.Line != "" && errors.Is(err, ErrNotObtained) && l.queue.lastDeadline(key).IsZero() {
			l.nom.pass(key) // the last waiter here gave up: out of the line
		}
		return nil, err
	}
	le := l.held(ctx, ask, !opts.ExplicitLease)
	le.token = token
	return le, nil
}

// orphaned records the give-back of an attempt for ask that got no answer (orphan.go): the
// release script, which decrements only its field's own hold.
func (l *reentrantLocker) orphaned(ctx context.Context, err error, ask core.Ask) {
	ask.Line, ask.Until = "", time.Time{}
	orphaned(ctx, err, fmt.Sprintf("%p\x00%s\x00%s", l, ask.Key, ask.Field), func(ctx context.Context) error {
		return (&reentrantLease{l: l, ask: ask}).release(ctx, nil)
	}, func(ctx context.Context) error {
		return settleHolds(ctx, l.rdb, ask.Key, l.hold.Field(ask), l.mu, l.holds, ask.Key+"\x00"+ask.Field, func(ctx context.Context) error {
			return releaseHold(ctx, nil, l.rdb, l.sub.mode, l.hold, ask, func() error { return nil })
		})
	})
}

// try runs the acquire script once (RFencedLock's when fenced, with the replicas' wait when synced):
// held with its fencing token (0 but in RFencedLock's layout), or the holder's remaining PTTL
// (-1ms: no TTL). A failed attempt of an ask with a Line queues its process in the line until
// ask.Until, in the same script.
func (l *reentrantLocker) try(ctx context.Context, ask core.Ask) (bool, time.Duration, int64, error) {
	markAttempt(ctx)
	switch {
	case l.fenced:
		return l.tryFenced(ctx, ask)
	case l.sync != nil:
		held, ttl, err := l.trySynced(ctx, ask)
		return held, ttl, 0, err
	}
	ask.Now = time.Now()
	t, err := attempt(ctx, l.rdb, l.sub.mode, l.hold, ask)
	if t.Refused {
		return false, 0, 0, fmt.Errorf("%w: %w: %s: owner %s holds its read side; release it first", ErrNotObtained, ErrUpgrade, ask.Key, strings.TrimPrefix(ask.Field, l.id+":"))
	}
	return t.Held, t.Wait, 0, err
}

// held builds the lease of a successful acquisition and, in watchdog mode, joins or starts the
// owner's renewal of this lock; an explicit lease has a life of its own. The renewal carries
// ctx's values (not its cancellation).
func (l *reentrantLocker) held(ctx context.Context, ask core.Ask, watch bool) *reentrantLease {
	ask.Line, ask.Until = "", time.Time{}
	le := &reentrantLease{l: l, ask: ask}
	lease := ask.Lease
	if !watch {
		le.own.startUnwatched(ctx, lease, lease, time.Time{}, nil) // nothing to push
	}
	id := ask.Key + "\x00" + ask.Field
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holds.add(id, 1)
	if !watch {
		return le
	}
	e := l.entries[id]
	if e == nil || isDone(e.wd.Lost()) {
		e = &renewal{l: l, ask: ask, id: id}
		e.wd = &e.own
		e.own.start(ctx, lease, lease, attemptSent(ctx, time.Now()).Add(lease), e, true, true, true)
		l.entries[id] = e
	}
	e.holds++
	le.entry = e
	return le
}

// forget drops a lost renewal entry from the map if it is still the current one, with the
// owner's local holds: the lock is no longer held here, so the owner's next acquisition waits in
// line like anyone's.
func (l *reentrantLocker) forget(id string, e *renewal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries[id] == e {
		delete(l.entries, id)
		delete(l.holds, id)
	}
}

// unhold ends one hold of a renewal entry; the last one stops its watchdog (Redisson's
// cancelExpirationRenewal). It runs before the release script, so a renewal can never race
// the release and report a lock "lost" that was simply given back.
func (l *reentrantLocker) unhold(id string, e *renewal) {
	l.mu.Lock()
	e.holds--
	last := e.holds <= 0
	if last && l.entries[id] == e {
		delete(l.entries, id)
	}
	l.mu.Unlock()
	if last {
		e.wd.Stop()
	}
}

// Close ends the pub/sub connection and the waits of this Locker's waiters. Held leases keep
// their watchdogs until they are released.
func (l *reentrantLocker) Close() error {
	l.queue.close()
	return l.sub.Close()
}

// reentrantLease is one acquisition of a reentrant lock.
type reentrantLease struct {
	l     *reentrantLocker
	ask   core.Ask // its key, field and lease
	entry *renewal // nil with an explicit lease (no watchdog)
	own   life     // an explicit lease's life
	gate  releaseGate
	token int64 // the fencing token in RFencedLock's layout; 0 for RLock
}

func (le *reentrantLease) Key() string   { return le.ask.Key }
func (le *reentrantLease) Field() string { return le.l.hold.Field(le.ask) }
func (le *reentrantLease) Token() int64  { return le.token }

// Lost is closed when the owner's watchdog found the lock gone, or an explicit lease's life ran
// out or was given back.
func (le *reentrantLease) Lost() <-chan struct{} {
	if le.entry == nil {
		return le.own.Lost()
	}
	return le.entry.wd.Lost()
}

// Renewals counts the watchdog's successful renewals of this lock for this owner.
func (le *reentrantLease) Renewals() int64 {
	if le.entry == nil {
		return 0
	}
	return le.entry.wd.Renewals()
}

// releaseAfter gives back one hold. A release by someone who no longer holds the lock (its lease ran
// out, or this lease was already released) is ErrNotHeld, as Redisson's
// IllegalMonitorStateException. It runs after the holder's pipeline p, when there is one (runScript).
func (le *reentrantLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	return le.gate.release(ctx, p, le.ask.Key, func() {
		id := le.ask.Key + "\x00" + le.ask.Field
		le.l.mu.Lock()
		le.l.holds.add(id, -1)
		le.l.mu.Unlock()
		if le.entry != nil {
			le.l.unhold(id, le.entry)
		} else {
			le.own.Stop()
		}
	}, func() error { return le.release(ctx, p) })
}

// release sends the release script (again, after a failure to reach Redis), after the holder's
// pipeline p when there is one.
func (le *reentrantLease) release(ctx context.Context, p redis.Pipeliner) error {
	ask := le.ask
	if n := le.l.nom; n != nil {
		ask = n.releaseAsk(ctx, ask)
		if ask.Until.IsZero() {
			// Out of line (no waiter here): one that comes after must not sleep on the hint its
			// holder left (waiting.go rule 3) for a nomination this process is not in line for.
			defer n.queue.ring(ask.Key)
		} else {
			// In line for the waiters here: their head, asleep on that hint, waits for a
			// nomination, and looks again within the lost-nomination bound (N3).
			defer n.queue.inLine(ask.Key, n.lostGrant)
		}
	}
	return releaseHold(ctx, p, le.l.rdb, le.l.sub.mode, le.l.hold, ask, func() error { return noField(ask.Key, le.Field()) })
}

// refresh pushes the lock's expiry out by the lease, while the field is still ours.
func (le *reentrantLease) refresh(ctx context.Context) error {
	return le.own.refreshBy(ctx, le.entry != nil, func(ctx context.Context) error { return le.refreshOn(ctx, le.l.rdb) })
}

// refreshOn is refresh sent through s (one connection, for WithReplicas).
func (le *reentrantLease) refreshOn(ctx context.Context, s redis.Scripter) error {
	return le.l.renew(ctx, s, le.ask)
}

// renew runs the kind's renewal of a's hold once through s: ErrNotHeld when the field is gone.
func (l *reentrantLocker) renew(ctx context.Context, s redis.Scripter, a core.Ask) error {
	return renewHold(ctx, s, classicMode, l.hold, a, func() error { return noField(a.Key, l.hold.Field(a)) })
}

// renewHash runs the renew script of the Redisson layout once: ErrNotHeld when the field is gone.
func renewHash(ctx context.Context, s redis.Scripter, a core.Ask) error {
	return renewHold(ctx, s, classicMode, core.RLock, a, func() error { return noField(a.Key, a.Field) })
}
