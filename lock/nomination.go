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

// nominator keeps the nomination line of NewReentrant: across processes, a release sends one
// process's head to try, not every process's, while Redisson's wire stays as it is. The rules of
// waiting are in waiting.go: rules 24–26 apply here (with 18–21 and 32–34).
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
	return script.Prefixed(script.NominationChannelPrefix, name)
}

// nominationKeys are the line scripts' keys (script/lua/rlock_line.lua).
func nominationKeys(name string) []string {
	return []string{name, unlockChannel(name), script.Prefixed(script.NominationLinePrefix, name),
		script.Prefixed(script.NominationWaitingPrefix, name), nominationPrefix(name)}
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
// least every lostGrant (waiting.go rule 26).
func (n *nominator) enlist(ctx context.Context, key string, deadline time.Time) (free bool, err error) {
	r, err := rlockEnlist.Run(ctx, n.rdb, nominationKeys(key), time.Now().UnixMilli(), n.id, deadline.UnixMilli()).Int()
	if err != nil {
		return false, redisErr("queue for "+key, err)
	}
	return r == 0, nil
}

// pass takes this process out of key's line and, when the lock is free, nominates the next
// process (waiting.go rules 20 and 21): none of its waiters is left to take the lock up.
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
// out (waiting.go rule 34).
func (n *nominator) sharded(ctx context.Context) string {
	if n.sub.mode.useSharded(ctx) {
		return "1"
	}
	return "0"
}
