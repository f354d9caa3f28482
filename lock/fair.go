package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// fairLocker is Redisson's RFairLock: the reentrant lock's hash, plus a queue of waiters in Redis
// that decides the order across every process, so the first to queue is the first served
// whichever instance it came through. Each waiter is woken on its own channel by the release
// before it; a waiter that gives up leaves the queue and the ones behind it move up; a waiter
// that dies stays at most its wait (Redisson's threadWaitTime) at the head before the next
// acquire or release drops it.
//
// Unlike the other modes it has no in-process queue (handoff.go): every waiter queues in Redis
// at once, which is what makes the order global. Its rules of waiting, beside waiting.go's:
//
//   - F1. Redisson's queue decides the order across every process: the first to queue is the
//     first served. Checked by TestFairServesInQueueOrderAcrossProcesses and internal/interop's
//     TestMixedFairLineEqualWaits.
//   - F2. A release wakes the first waiter alone, on its own channel, after dropping the dead at
//     the head. A waiter of this library (in the grant hash) gets the lock taken for it, as its
//     own acquire would, with its grant TTL (L4); anyone else is told with the unlock message and
//     takes the lock itself. Checked by TestFairHandsOverWithinOneProcess,
//     TestFairHandoverRacingTheWaitersOwnAttempt and TestFairHandoverKeepsTheWaitersLease.
//   - F3. A waiter sleeps until it is told or until its estimated turn, bounded below so a stale
//     estimate is no busy loop, and above by the thread wait, which puts a waiter a script dropped
//     back in line. A release or heartbeat that drops a waiter for its deadline while its process
//     may live tells it with the unlock message, so it queues again at once. Checked by
//     internal/interop's TestMixedFairLineUnequalWaits and TestFairReleaseTellsALiveWaiterItDropped.
//   - F4. A process listens to one pattern per key (classic pub/sub) and handles a message once,
//     for the waiter it names; with sharded pub/sub each waiter subscribes its own channel.
//     Checked by TestPatternMessageHandledOnce.
//   - F5. The deadlines are Redisson's: the move-ups Redisson writes on every acquisition are
//     deferred (fair_lag.lua), but a waiter's deadline is what Redisson's scripts would have
//     written. Checked by TestFairDeferredMoveUpsMatchRedisson,
//     TestFairWithThreadWaitMatchesRedisson and TestFairThreadWaitChainsDeadlines.
//   - F6. A process with waiters says it is alive every core.AliveEvery, and any live process's
//     heartbeat drops the waiters of one that stopped, so a crashed process costs about a
//     second (rule 8). A beat that then finds the lock free tells the first waiter: its process
//     rings it, or, in another process, the unlock message on its channel wakes it. A Redisson
//     client waits in the same queue, is never in the grant hash, and is told with the unlock
//     message. Checked by TestConformance/fair/12-crashed-waiters, TestFairRedissonLayout,
//     TestFairBeatWakesAHeadOfAnotherProcess and internal/interop's TestMixedFairLineKilledWaiter.
//   - F7. A waiter whose grant message is lost is rung by its process's next heartbeat, which
//     reads the lock's holder, and its attempt takes the lock handed to it: it costs at most
//     core.AliveEvery and a round trip, not the grant TTL. Checked by
//     TestFairLostGrantFoundByHeartbeat and simulate's TestFairLostGrant.
type fairLocker struct {
	rdb   redis.UniversalClient
	id    string
	lease time.Duration
	log   *slog.Logger
	sub   *subscriber
	// threadWait, when above 0, replaces each acquisition's wait as its thread wait
	// (WithThreadWait).
	threadWait time.Duration
	// calls are its scripts, from this process (l.id), with how far the move-ups of the waiters
	// behind the first may be owed before they are written (script/lua/fair_lag.lua): fairLagCap,
	// or 0 with a thread wait (WithThreadWait).
	calls script.Fair

	// waiters are the waiters of this process, by key and field. A release here whose next
	// waiter is also here hands the lock over to it in the release script and rings its bell, so
	// it holds the lock without a round trip of its own; a release elsewhere rings it as soon as
	// its PUBLISH arrives.
	mu      sync.Mutex
	waiters map[string]*fairWait
	// holds counts the holds of this process by key and field, each until its release has been
	// answered (fairLease.releaseAfter): a field found in the lock hash that this process does not
	// hold was handed over to its waiter, which takes it as it is (fair_acquire.lua), instead of
	// re-entering it.
	holds holdCount
	// beats are the heartbeats of the keys this process has waiters for, by key.
	beats map[string]*fairHeartbeat
}

// fairHeartbeat says, every core.AliveEvery while this process has waiters for its key, that the
// process is alive (script/lua/fair_alive.lua).
type fairHeartbeat struct {
	waiters int
	stop    chan struct{}
}

// ring wakes the waiter; a wake-up already pending is enough.
func (w *fairWait) ring() {
	select {
	case w.bell <- struct{}{}:
	default:
	}
}

func newFair(d settings) (locker, error) {
	l := &fairLocker{rdb: d.Data, id: cmp.Or(d.InstanceID, uuid.NewString()), lease: d.Lease, log: d.Logger,
		threadWait: d.ThreadWait, waiters: map[string]*fairWait{}, holds: holdCount{},
		beats: map[string]*fairHeartbeat{}}
	l.calls = script.Fair{ID: l.id, LagCap: fairLagCap}
	if d.ThreadWait > 0 {
		l.calls.LagCap = 0 // Redisson clients share the queue (WithThreadWait): write every move-up
	}
	l.sub = newSubscriber(d.Data, l.log, newPubsubMode(d.Data, d.Subscription), func(payload string) bool {
		return payload == unlockMessage || payload == fairGrantMessage
	})
	return l, nil
}

// fairQueue and fairDeadlines name the fair lock's queue and deadline keys, as Redisson's
// prefixName does (in the same hash slot as the lock).
func fairQueue(name string) string     { return script.Prefixed(script.RedissonQueuePrefix, name) }
func fairDeadlines(name string) string { return script.Prefixed(script.RedissonTimeoutPrefix, name) }

// fairLag names this project's own hash of the move-ups the waiters behind the first still owe
// (script/lua/fair_lag.lua): Redisson writes every waiter's deadline on every acquisition, these scripts
// only the first one's. It lives as long as the queue does.
func fairLag(name string) string { return script.Prefixed(script.FairLagPrefix, name) }

// fairLagCap is how far (ms) the waiters behind the first may owe their move-ups before the
// scripts write them out, when no Redisson client shares the queue: a day. A write-out is one
// write per waiter (about 2 ms of Redis with 1,024 waiters), and each hand-over adds a thread
// wait to the lag, so with 10 s waits a cap of 5 minutes wrote out every 30 hand-overs. Measured
// serially with 1,024 waiters and 10 s waits (a hand-over and a join per sale, three alternating
// runs): a median 170 µs of script time per sale with 5 minutes, 74 with a day. Only the raw
// scores drift (later, never earlier); what a waiter owes is in the lag hash, and the service's
// /locks view subtracts it.
const fairLagCap = 86_400_000

// fairGrantMessage tells a waiter on its own channel that a release in another process has taken
// the lock for it (a Redisson client, which hears only the unlock message, never gets it).
const fairGrantMessage = script.FairGrantMessage

// fairChannel is the channel on which the waiter with field is told that its turn has come.
func fairChannel(name, field string) string { return unlockChannel(name) + ":" + field }

// Acquire joins the queue for key and waits for its turn, at most opts.Wait. The wait is also
// the thread wait of Redisson's tryLock(wait, ...): how long this waiter may stay at the head of
// the queue without coming for the lock before the others pass it (should it die meanwhile).
func (l *fairLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	fw := l.enter(key, opts)
	defer fw.leave(false)
	before := l.sub.patternRound(fw.pattern)
	due, held, err := fw.try(ctx)
	switch {
	case err != nil:
		return fw.fail(ctx, err)
	case held:
		fw.leave(true)
		return l.held(ctx, key, fw.field, fw.lease, fw.lease, fw.leaseMs, fw.waitMs, !opts.ExplicitLease)
	case fw.wait == 0:
		return fw.fail(ctx, notObtained(ctx, key))
	}
	defer l.beatWhileWaiting(key)()
	h, lookNow := fw.subscribe(ctx, before)
	defer l.sub.leave(h)
	if err := fw.waitTurn(ctx, due, lookNow); err != nil {
		return fw.fail(ctx, err)
	}
	return fw.take(ctx, opts)
}

// fairWait is one acquisition's stay in the fair queue: a waiter of this process, registered
// with the Locker from enter until leave, and what its scripts are sent.
type fairWait struct {
	l                        *fairLocker
	key, field, id           string
	pattern                  string // this process's grant channels for key (classic pub/sub)
	lease, wait              time.Duration
	leaseMs, waitMs, grantMs int64
	deadline                 time.Time
	registered               bool

	bell chan struct{} // capacity 1
	// granted: a release took the lock for this waiter; set under fairLocker.mu, and only
	// while the waiter is registered.
	granted atomic.Bool
	// short: the release was in another process, and the lock lives grantTTL, not the lease.
	short    atomic.Bool
	grantTTL time.Duration
}

// enter registers a waiter for key. The bell is there before the first attempt, so a release in
// this process after it queued us rings it; so does a release elsewhere if this process's
// subscription (one pattern per key, "<channel of key>:<instance-id>:*", which hears every waiter
// of this process by its own channel, as a Redisson client publishes it) was confirmed by then.
func (l *fairLocker) enter(key string, opts Options) *fairWait {
	field := l.id + ":" + ownerOf(opts)
	lease := opts.Lease
	wait := max(opts.Wait, 0)
	fw := &fairWait{l: l, key: key, field: field, id: key + "\x00" + field,
		pattern: globEscape(fairChannel(key, l.id+":")) + "*",
		lease:   lease, wait: wait, deadline: time.Now().Add(wait),
		leaseMs: max(lease.Milliseconds(), 1),
		waitMs:  max(cmp.Or(l.threadWait, wait).Milliseconds(), 1),
		// A lock handed to this waiter from another process lives min(lease, wait, 1 s) until it
		// pushes it out to its lease (a third of the way in), as in the lua and fenced line: a
		// waiter whose process died meanwhile holds the line up that long at most.
		bell:     make(chan struct{}, 1),
		grantTTL: core.GrantTTL(lease, wait, core.MaxGrantTTL),
	}
	if wait > 0 {
		fw.grantMs = fw.grantTTL.Milliseconds() // with no wait: not queued, never handed anything
	}
	l.mu.Lock()
	l.waiters[fw.id] = fw
	l.mu.Unlock()
	fw.registered = true
	return fw
}

// try is one attempt: it joins the queue, or takes the lock when its turn has come.
func (fw *fairWait) try(ctx context.Context) (time.Duration, bool, error) {
	return fw.l.try(ctx, fw.key, fw.id, fw.field, fw.leaseMs, fw.waitMs, fw.grantMs, fw.deadline)
}

// leave unregisters the waiter, holding the lock from then on when won; it reports whether a
// release handed it the lock first.
func (fw *fairWait) leave(won bool) bool {
	if fw.registered {
		fw.registered = false
		fw.l.mu.Lock()
		delete(fw.l.waiters, fw.id)
		if won {
			fw.l.holds.add(fw.id, 1)
		}
		fw.l.mu.Unlock()
	}
	return fw.granted.Load()
}

// fail ends a wait without the lock: out of the queue, and a lock handed over meanwhile given
// back on to the next waiter.
//
// After a transient failure the Locker rides (Locker.ride): it tries again with the same owner,
// whose place in Redisson's queue is kept for it. The place is left when the acquisition ends
// without the lock (leaveAtEnd). Left now, a leave sent again in the background could take out
// the place the next attempt has just taken, which then waits for nothing.
func (fw *fairWait) fail(ctx context.Context, err error) (heldLock, error) {
	switch {
	case fw.leave(false):
		fw.l.releaseFor(ctx, fw.key, fw.field, fw.leaseMs, fw.waitMs)
	case core.FairLeavesNow(transient(err)) || !leaveAtEnd(ctx, "fair-place\x00"+fw.id, func(ctx context.Context) error {
		return fw.l.cancel(ctx, fw.key, fw.field, fw.waitMs)
	}):
		fw.l.giveUp(ctx, fw.key, fw.field, fw.waitMs)
	}
	return nil, err
}

// subscribe listens for this waiter's grant. It reports lookNow when a release elsewhere may have
// gone unheard: the subscription was not confirmed before the attempt (before is the pattern's
// round then), or broke since; the first look then comes once it is confirmed.
func (fw *fairWait) subscribe(ctx context.Context, before uint64) (waitHandle, bool) {
	l := fw.l
	var h waitHandle
	if l.sub.mode.useSharded(ctx) {
		// Sharded pub/sub has no patterns: each waiter subscribes its own channel, as Redisson's.
		h = l.sub.listen(ctx, fairChannel(fw.key, fw.field), false, func(_, payload string) {
			l.ringLocal(fw.key, fw.field, payload)
		})
		before = 0
	} else {
		h = l.sub.joinPattern(ctx, fw.pattern, func(ch, payload string) {
			if ch == fw.pattern {
				l.ringAll(fw.key) // resubscribed: a grant may have gone unheard
				return
			}
			l.ringLocal(fw.key, strings.TrimPrefix(ch, unlockChannel(fw.key)+":"), payload)
		})
	}
	lookNow := before == 0 || l.sub.patternRound(fw.pattern) != before
	if lookNow {
		select {
		case <-h.ready:
		case <-time.After(min(fw.wait, 100*time.Millisecond)):
		case <-ctx.Done():
		}
	}
	return h, lookNow
}

// waitTurn waits until the lock is this waiter's: handed over by a release, or taken by an
// attempt made when the bell rang or the estimated turn (due) came. The waiter is the one waiter
// of a core.Queue of its own (fair has no in-process line: every waiter queues in Redis), which
// decides when it looks again and when its wait is over; how long it sleeps after an attempt is
// core.FairNap (F3).
func (fw *fairWait) waitTurn(ctx context.Context, due time.Duration, lookNow bool) error {
	q := core.NewQueue(core.QueueConfig{})
	now := time.Now()
	q.Enter(now, 1, fw.deadline)
	threadWait := time.Duration(fw.waitMs) * time.Millisecond
	nap := func(due time.Duration) time.Duration { return core.FairNap(due, threadWait) }
	retry := nap(due)
	if lookNow {
		retry = 0
	}
	r := q.Failed(now, 1, retry)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for !fw.granted.Load() {
		switch {
		case len(r.GiveUp) > 0:
			return notObtained(ctx, fw.key)
		case r.Try != 0:
			due, held, err := fw.try(ctx)
			if err != nil || held {
				// Taken by its own attempt, or a handover found before it was told (the attempt
				// then took it as it was, without a second hold).
				return err
			}
			r = q.Failed(time.Now(), 1, nap(due))
			continue
		}
		t.Reset(time.Until(r.Wake))
		select {
		case <-fw.bell:
			r = q.Ring(time.Now())
		case <-t.C:
			r = q.Tick(time.Now())
		case <-ctx.Done():
			return notObtained(ctx, fw.key)
		}
	}
	return nil
}

// take makes the lock this waiter got its lease: a lock handed over short from another process
// is pushed out to the lease a third of the way in; one handed over with the default lease gets
// the lease this waiter asked for.
func (fw *fairWait) take(ctx context.Context, opts Options) (heldLock, error) {
	l, key := fw.l, fw.key
	granted := fw.leave(true)
	ttl := fw.lease
	if granted && fw.short.Load() && fw.grantTTL < fw.lease {
		ttl = fw.grantTTL // a release elsewhere handed it over: it lives the grant TTL
	} else if granted && !fw.short.Load() && fw.leaseMs != l.lease.Milliseconds() {
		if err := l.rdb.PExpire(context.WithoutCancel(ctx), key, fw.lease).Err(); err != nil {
			return fw.fail(ctx, redisErr("fair acquire "+key, err))
		}
	}
	return l.held(ctx, key, fw.field, fw.lease, ttl, fw.leaseMs, fw.waitMs, !opts.ExplicitLease)
}

// beatWhileWaiting counts a waiter of key in, starting key's heartbeat for the first, and returns
// the function that counts it out (stopping the heartbeat after the last).
func (l *fairLocker) beatWhileWaiting(key string) func() {
	l.mu.Lock()
	b := l.beats[key]
	if b == nil {
		b = &fairHeartbeat{stop: make(chan struct{})}
		l.beats[key] = b
		go l.heartbeat(key, b.stop)
	}
	b.waiters++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if b.waiters--; b.waiters == 0 {
			close(b.stop)
			delete(l.beats, key)
		}
	}
}

// heartbeat says every core.AliveEvery that this process is alive, which drops the waiters of a
// process that has stopped saying so from the head of key's queue, and rings the waiters here
// that its reading names (core.FairBeatSaid: F6, F7).
func (l *fairLocker) heartbeat(key string, stop <-chan struct{}) {
	t := time.NewTimer(core.AliveEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), core.AliveFor/2)
		now := time.Now()
		r, err := l.sub.mode.run(ctx, l.rdb, l.calls.Beat(key, now.UnixMilli(), now.Add(core.AliveFor).UnixMilli())).Slice()
		cancel()
		next := core.AliveEvery
		head, pttl, holder, ok := script.ReadFairBeat(r)
		if err != nil || !ok {
			l.log.Debug("fair lock: heartbeat", "key", key, "err", err)
		} else {
			b := core.FairBeatSaid(head, pttl, holder)
			for _, field := range b.Ring {
				l.ringLocal(key, field, unlockMessage)
			}
			if b.All {
				l.ringAll(key)
			}
			next = b.Next
		}
		t.Reset(next)
	}
}

// ringAll wakes every waiter of this process for key.
func (l *fairLocker) ringAll(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, w := range l.waiters {
		if strings.HasPrefix(id, key+"\x00") {
			w.ring()
		}
	}
}

// grant records that a release in this process took key's lock for the waiter with field, and
// wakes it. false: that waiter is no longer waiting here, so nobody holds the lock it was given.
// held: that waiter took the lock by its own attempt already (it found the handover first).
// short: the release was in another process (the lock lives the waiter's grant TTL).
func (l *fairLocker) grant(key, field string, short bool) (granted, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := key + "\x00" + field
	w := l.waiters[id]
	if w == nil {
		return false, l.holds.has(id)
	}
	w.short.Store(short)
	w.granted.Store(true)
	w.ring()
	return true, false
}

// releaseFor gives back a lock that a release handed over to field, whose waiter had gone by
// then: it is released for it, which hands it on to the next waiter in turn.
func (l *fairLocker) releaseFor(ctx context.Context, key, field string, leaseMs, waitMs int64) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := l.release(cctx, key, field, leaseMs, waitMs, nil); err != nil {
		l.log.Warn("fair lock: give back a lock handed to a waiter that left", "key", key, "field", field, "err", err)
	}
}

// release runs the release script for field, and passes the lock on: a waiter of this process
// that was handed the lock is woken; a waiter here that is first in line after a plain release
// is rung at once. A handover to a waiter that has just left is released for it in turn.
// With p, the holder's pipeline, the first round joins its end.
func (l *fairLocker) release(ctx context.Context, key, field string, leaseMs, waitMs int64, p redis.Pipeliner) error {
	for range 1000 { // each round takes a waiter off the queue; the queue is not endless
		c := l.calls.Release(key, field, leaseMs, time.Now().UnixMilli(), l.lease.Milliseconds(), waitMs)
		r, err := runScript(ctx, p, l.rdb, l.sub.mode.script(ctx, c.Script), c).Slice()
		p = nil // a next round (a hand-over to a waiter that left) goes alone
		if errors.Is(err, redis.Nil) {
			return noField(key, field)
		}
		if err != nil {
			return redisErr("fair release "+key, err)
		}
		kind, next, ok := script.ReadFairRelease(r)
		switch {
		case !ok:
			return fmt.Errorf("lock: fair release %s: unexpected reply %v", key, r)
		case kind == 3:
			return nil // handed to a waiter of another process, told on its channel
		case kind == 2:
			if granted, held := l.grant(key, next, false); granted || held {
				return nil
			}
			// Handed to a waiter that had left without taking it: release it for that waiter,
			// which hands it on in turn.
			field, leaseMs = next, l.lease.Milliseconds()
			continue
		case next != "":
			l.ringLocal(key, next, unlockMessage)
		}
		return nil
	}
	return fmt.Errorf("lock: fair release %s: the lock was handed to 1000 waiters that had left", key)
}

// try runs the acquire script once: held, or about how long until this waiter's turn. grantMs is
// the TTL of a lock handed to this waiter from another process (0: hand it none); deadline is
// when this waiter gives up.
func (l *fairLocker) try(ctx context.Context, key, id, field string, leaseMs, waitMs, grantMs int64, deadline time.Time) (time.Duration, bool, error) {
	l.mu.Lock()
	pickup := !l.holds.has(id) // not on a re-entry
	l.mu.Unlock()
	// How long the queue must outlive this join. With a thread wait, Redisson clients may share
	// the queue and count on its chained deadlines: 0, the new waiter's deadline. Without one only
	// this library's waiters are in it, and each gives up by its own deadline, so the queue lives
	// until the last of them has, and a little more (after a crash of everyone: the wait and at most
	// a quarter of it more, up to a second; not the chain).
	keepMs := int64(0)
	if l.threadWait <= 0 {
		keepMs = max(time.Until(deadline).Milliseconds()+1, 1)
	}
	markAttempt(ctx)
	aliveUntil := int64(0)
	if grantMs > 0 { // a waiter that queues: its process is alive while it waits
		aliveUntil = time.Now().Add(core.AliveFor).UnixMilli()
	}
	n, err := run(ctx, l.rdb, l.calls.Acquire(key, field, leaseMs, waitMs, time.Now().UnixMilli(), grantMs, pickup, keepMs, aliveUntil)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, true, nil
	}
	if err != nil {
		err = redisErr("fair acquire "+key, err)
		if pickup { // an unanswered re-entry is not given back (reentrant.go)
			orphaned(ctx, err, "fair\x00"+key+"\x00"+field, func(ctx context.Context) error {
				// The lock, when the attempt took it; else its place in the queue.
				if err := l.release(ctx, key, field, leaseMs, waitMs, nil); !errors.Is(err, ErrNotHeld) {
					return err
				}
				return l.cancel(ctx, key, field, waitMs)
			}, func(ctx context.Context) error {
				return settleHolds(ctx, l.rdb, key, field, &l.mu, l.holds, id, func(ctx context.Context) error {
					return l.release(ctx, key, field, leaseMs, waitMs, nil)
				})
			})
		}
		return 0, false, err
	}
	return time.Duration(n) * time.Millisecond, false, nil
}

// giveUp leaves the queue (Redisson's acquireFailedAsync), even when the caller has gone. A
// leave that gets no answer is sent again in the background by the give-back policy (resend),
// until the entry's own deadline: this process is alive, so nobody else drops its entry, and left
// at the head of the queue it would hold every waiter behind it up until then (a failover).
func (l *fairLocker) giveUp(ctx context.Context, key, field string, waitMs int64) {
	within := max(time.Duration(waitMs)*time.Millisecond, l.lease)
	giveBackOnce(ctx, context.WithoutCancel(ctx), l.log, "fair lock: leave the queue", key, field, within, func(ctx context.Context) error {
		return l.cancel(ctx, key, field, waitMs)
	})
}

// cancel takes field out of key's queue (Redisson's acquireFailedAsync script), the ones behind
// moving up.
func (l *fairLocker) cancel(ctx context.Context, key, field string, waitMs int64) error {
	err := l.sub.mode.run(ctx, l.rdb, l.calls.Cancel(key, field, waitMs)).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return redisErr("fair leave the queue "+key, err)
	}
	return nil
}

// held builds the lease of a lock that lives ttl (the lease, or less when handed over short) from
// the acquisition's last attempt (sent before any release that handed it over) and starts its
// life: unless the lease is explicit, its watchdog (renewing every lease/3 with the acquisition's
// context values); without one, a lock handed over short is pushed out to its lease.
func (l *fairLocker) held(ctx context.Context, key, field string, lease, ttl time.Duration, leaseMs, waitMs int64, watch bool) (*fairLease, error) {
	le := &fairLease{l: l, key: key, field: field, leaseMs: leaseMs, waitMs: waitMs,
		tenure: tenure{ttl: ttl, until: attemptSent(ctx, time.Now()).Add(ttl)}}
	if le.stale() {
		if err := le.freshen(ctx, lease, le.renewLease); err != nil {
			return nil, handedOverLate(ctx, key, err, le)
		}
	}
	if !watch {
		le.life.startUnwatched(ctx, lease, le.ttl, le.until, le)
		return le, nil
	}
	le.wd = &le.life
	le.life.start(ctx, lease, le.ttl, le.until, le, true, true, true)
	return le, nil
}

// keep is a round of the lease's watchdog, or the push of a lock handed over short (keeper).
func (le *fairLease) keep(ctx context.Context) (renewOutcome, error) {
	return outcome(le.renewLease(ctx))
}

// lost logs why the watchdog lost the lease (keeper).
func (le *fairLease) lost(why error) {
	le.l.log.Warn("fair lock lost: renewal failed", "key", le.key, "field", le.field, "err", why)
}

// ringLocal wakes the waiter with field on key at once if it waits in this process; with the
// grant message, a release elsewhere took the lock for it. A grant for a waiter that has left
// (and did not take it by its own attempt) is given back for it, on to the next waiter.
func (l *fairLocker) ringLocal(key, field, payload string) {
	if !strings.HasPrefix(field, l.id+":") {
		return
	}
	if payload == fairGrantMessage {
		if granted, held := l.grant(key, field, true); !granted && !held {
			// The departed waiter's wait is not known here: the waiters behind keep their
			// deadlines (later than Redisson's move-up would make them, never earlier).
			go l.releaseFor(context.Background(), key, field, l.lease.Milliseconds(), 0)
		}
		return
	}
	l.mu.Lock()
	w := l.waiters[key+"\x00"+field]
	l.mu.Unlock()
	if w != nil {
		w.ring()
	}
}

// Close ends the waiters' pub/sub connection.
func (l *fairLocker) Close() error { return l.sub.Close() }

// fairLease is one hold of a fair lock.
type fairLease struct {
	l       *fairLocker
	key     string
	field   string
	leaseMs int64
	waitMs  int64 // the holder's wait: the thread wait a handover moves the queue's deadlines by
	wd      *life // &life, or nil with an explicit lease
	life    life  // the lease's life, watched or not: Lost
	// tenure is the TTL the lock was taken with.
	tenure
	gate releaseGate
}

func (le *fairLease) Key() string   { return le.key }
func (le *fairLease) Field() string { return le.field }
func (le *fairLease) Token() int64  { return 0 }

// Lost is closed when the lease's life found the lock gone or run out, or it was given back.
func (le *fairLease) Lost() <-chan struct{} { return le.life.Lost() }

// Renewals counts the watchdog's successful renewals.
func (le *fairLease) Renewals() int64 { return le.wd.Renewals() }

// Release gives back one hold; the last one deletes the lock and tells the first waiter.
// releaseAfter is Release after the holder's pipeline p, when there is one (runScript).
//
// The hold is counted out of this process only once its release has been sent and answered (or
// got no answer), not when it starts: until then the lock is still this hold's in Redis, with
// the holder's last writes (p) on their way ahead of the release, and a grant for this field that
// comes late (a handover its waiter took by its own attempt before it was told: grant) must find
// it held. Counted out at the start, the grant "gave back the lock handed to a waiter that left"
// and so handed it to the next waiter ahead of those writes: two holders at once, one update
// lost (chaos case 7, fair).
func (le *fairLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	first := false
	err := le.gate.release(ctx, p, le.key, func() {
		le.life.Stop()
		first = true
	}, func() error { return le.l.release(ctx, le.key, le.field, le.leaseMs, le.waitMs, p) })
	if first {
		le.l.mu.Lock()
		le.l.holds.add(le.key+"\x00"+le.field, -1)
		le.l.mu.Unlock()
	}
	return err
}

// ask is the lease's hold of Redisson's hash, as its renewal sends it.
func (le *fairLease) ask() core.Ask {
	return core.Ask{Key: le.key, Field: le.field, Lease: time.Duration(le.leaseMs) * time.Millisecond}
}

// renewLease renews the lock to its lease, while the field is still ours.
func (le *fairLease) renewLease(ctx context.Context) error {
	return renewHash(ctx, le.l.rdb, le.ask())
}

// refresh pushes the lock's expiry out by the lease, while the field is still ours.
func (le *fairLease) refresh(ctx context.Context) error {
	return le.life.refreshBy(ctx, le.wd != nil, func(ctx context.Context) error { return le.refreshOn(ctx, le.l.rdb) })
}

// refreshOn is refresh sent through s (one connection, for WithReplicas).
func (le *fairLease) refreshOn(ctx context.Context, s redis.Scripter) error {
	return renewHash(ctx, s, le.ask())
}
