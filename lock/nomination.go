package lock

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
)

var (
	rlockRelease = redis.NewScript(script.RLockRelease)
	rlockEnlist  = redis.NewScript(script.RLockEnlist)
	rlockPass    = redis.NewScript(script.RLockPass)
)

// The nomination line of NewReentrant: across processes, a release sends one process's head to
// try, not every process's, while Redisson's wire stays as it is. The invariants, stated once:
//
//  1. Safety is not here. Who holds the lock is decided by Redisson's acquire script alone; a
//     nomination that is lost, late or wrong costs time, never exclusion. Nothing here writes the
//     lock hash, and every release still deletes it and, whenever a Redisson waiter listens,
//     publishes Redisson's unlock message, so a Java Redisson client on the same lock sees a
//     Redisson peer: its waiters wake on every release and race whoever tries.
//  2. The line. Beside Redisson's keys, in the lock's hash slot, a list of the processes
//     (Lockers) with a waiter for the lock, in the order they first failed to take it, and each
//     one's deadline (its last waiter's). A process is in it once: only its head tries
//     (handoff.go). A head that fails to take the lock queues its process (keeping its place); a
//     release by a process with more waiters keeps it in line for them, in the same script.
//  3. A release that deletes the lock tells the first process in line whose deadline has not
//     passed, on that process's own nomination channel, and only that process's head tries: one
//     message per release, however many processes wait. Redisson's unlock message goes out after
//     it whenever a client listens on the unlock channel itself, as Redisson's waiters do; this
//     library's processes listen to it by pattern (PUBSUB NUMSUB leaves them out). An unlock
//     message rings every process's queue: it is a Redisson client's release, or a release that a
//     Redisson waiter hears too, and every head then tries, as in Redisson. With sharded pub/sub,
//     which has no patterns, the unlock message always goes out and is listened to as a channel,
//     so there the herd stays.
//  4. A process in line whose head is not told looks again at least every lostGrantBound, so a
//     nominee that died, or a message lost with a broken connection, costs the others that much
//     at most. A nominee whose waiters have all left passes the nomination on (the next in line)
//     when it hears it (also when its waiter took the lock on its own first: one unlock message
//     more, where a Redisson waiter listens), and so does a process whose last waiter gives up. A process with no
//     waiter left when it releases is not in line; its next waiter, should one come, tries at
//     once rather than wait for a nomination.
type nominator struct {
	rdb   redis.UniversalClient
	sub   *subscriber
	queue *handoff
	// id names this Locker in the line and its nomination channels.
	id string
	// lostGrant is lostGrantBound (a test that counts commands raises it).
	lostGrant time.Duration
}

// nominationPrefix starts the nomination channels of lock name, in the lock's hash slot: each
// process's is "<prefix>:<id>".
func nominationPrefix(name string) string {
	return redissonPrefixed(script.NominationChannelPrefix, name)
}

// nominationKeys are the line scripts' keys (script/lua/rlock_line.lua).
func nominationKeys(name string) []string {
	return []string{name, unlockChannel(name), redissonPrefixed(script.NominationLinePrefix, name),
		redissonPrefixed(script.NominationWaitingPrefix, name), nominationPrefix(name)}
}

// newNominator gives the reentrant Locker l a nomination line: its queues listen to the unlock
// channel and to this process's nomination channel.
func newNominator(l *reentrantLocker) *nominator {
	n := &nominator{rdb: l.rdb, sub: l.sub, queue: l.queue, id: uuid.NewString(), lostGrant: lostGrantBound}
	l.sub.accept = func(payload string) bool { return payload == unlockMessage || payload == nominated }
	l.queue.listen = n.listen
	return n
}

// nominated is the payload of a nomination.
const nominated = "1"

// listen subscribes the queue of key to its unlock channel (by pattern unless pub/sub is
// sharded), then to this process's nomination channel, on the subscriber's connection. The
// nomination channel's confirmation, which comes after the other's, is the ready one.
func (n *nominator) listen(key string, ring func()) (<-chan struct{}, func()) {
	ctx := context.Background()
	ch, pattern := unlockChannel(key), !n.sub.mode.useSharded(ctx)
	if pattern {
		ch = globEscape(ch)
	}
	unlock := n.sub.listen(ctx, ch, pattern, func(_, payload string) {
		if payload == unlockMessage || payload == "" { // "": resubscribed, releases may have gone unheard
			ring()
		}
	})
	next := n.sub.listen(ctx, nominationPrefix(key)+":"+n.id, false, func(_, payload string) {
		// Looked at before the ring: once rung, a waiter may take the lock, release it and leave
		// before this goroutine looks, and it would pass on a nomination already taken up.
		idle := n.queue.lastDeadline(key).IsZero()
		ring()
		if payload == nominated && idle {
			go n.pass(key) // nobody here to take it up
		}
	})
	return next.ready, func() {
		n.sub.leave(next)
		n.sub.leave(unlock)
	}
}

// enlist queues this process in key's line until deadline, after a failed attempt: it reports
// free when the lock was released meanwhile (try again now). Queued, the head looks again at
// least every lostGrant (rule 4).
func (n *nominator) enlist(ctx context.Context, key string, deadline time.Time) (free bool, err error) {
	r, err := rlockEnlist.Run(ctx, n.rdb, nominationKeys(key), time.Now().UnixMilli(), n.id, deadline.UnixMilli()).Int()
	if err != nil {
		return false, redisErr("queue for "+key, err)
	}
	return r == 0, nil
}

// pass takes this process out of key's line and, when the lock is free, nominates the next
// process (rule 4): none of its waiters is left to take the lock up.
func (n *nominator) pass(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := n.sub.mode.script(ctx, rlockPass).Run(ctx, n.rdb, nominationKeys(key),
		time.Now().UnixMilli(), n.id, 0, unlockMessage, n.sharded(ctx)).Err()
	if err != nil {
		n.sub.log.Debug("pass the nomination on", "key", key, "err", err)
	}
}

// releaseArgs are the release script's arguments (script/lua/rlock_release.lua) for field's release of
// key: this process stays in line when it has waiters left (stays).
func (n *nominator) releaseArgs(ctx context.Context, key, field string, leaseMs int64) (args []any, stays bool) {
	stay := int64(0)
	if last := n.queue.lastDeadline(key); !last.IsZero() {
		stay = last.UnixMilli()
	}
	return []any{time.Now().UnixMilli(), n.id, stay, unlockMessage, n.sharded(ctx), leaseMs, field}, stay > 0
}

// sharded is the scripts' flag for sharded pub/sub ("1"), where the unlock message always goes
// out (rule 3).
func (n *nominator) sharded(ctx context.Context) string {
	if n.sub.mode.useSharded(ctx) {
		return "1"
	}
	return "0"
}
