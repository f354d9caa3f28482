package lock

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// nominator is NewReentrant's place in the line in Redis (line.go's, script/lua/line.lua): across
// processes, a release sends one process's head to try, not every process's, while Redisson's
// wire stays as it is. Its members are processes, not waiters' values, and a release does not
// hand the lock over but nominates (script/lua/nominate.lua): a Java Redisson client's release
// deletes the hash without reading any line, so the waiters here also listen to Redisson's
// unlock message. Its rules of waiting, beside waiting.go's:
//
//   - N1. The line of L1, beside Redisson's keys in the lock's slot. Its members are the
//     processes with a waiter, each with its last waiter's deadline, each in it once. A head whose
//     attempt fails queues its process in the same script; a release by a process with more
//     waiters keeps it in line. Redisson's hash is never handed over: a Java client's release
//     deletes it without reading the line. Checked by TestNominationOneReleaseOneAttempt.
//   - N2. A release that deletes the lock tells the first process in line whose deadline has not
//     passed, on that process's own nomination channel, and only its head tries: one message per
//     release. Checked by TestNominationOneReleaseOneAttempt and
//     TestNominationUnlockMessageOnlyWhereRedissonListens.
//   - N3. A process in line that is not told looks again at least every core.LostGrantBound, so a
//     dead nominee or a lost message costs that much: a waiter's failed attempt sleeps that long
//     at most, and so does the next waiter of a release that keeps its process in line, which
//     would otherwise sleep on its holder's hint (core.Queue.InLine). A process with no waiter
//     left when it releases is not in line, and its next waiter tries at once. Checked by
//     TestNominationDeadNomineeHoldsTheLineForItsWait, TestReentrantWaiterWokenByUnlockMessage and
//     simulate's TestSharedProcess (reentrant, with pubsub-lost).
type nominator struct {
	rdb   redis.UniversalClient
	sub   *subscriber
	queue *handoff
	// id names this Locker in the line and its nomination channels.
	id string
	// lostGrant is core.LostGrantBound (a test that counts commands raises it).
	lostGrant time.Duration
}

// newNominator builds a reentrant Locker's place in the line on rdb, with its subscriber and
// queues: they listen to the unlock channel and to this process's nomination channel.
func newNominator(rdb redis.UniversalClient, log *slog.Logger, mode *pubsubMode) *nominator {
	n := &nominator{rdb: rdb, id: uuid.NewString(), lostGrant: core.LostGrantBound}
	n.sub = newSubscriber(rdb, log, mode, func(payload string) bool { return core.RLock.Rings(payload) || payload == nominated })
	n.queue = newHandoff(n.listen, nil, false)
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
	next := n.sub.listen(ctx, script.NominationChannel(key, n.id), false, func(_, payload string) {
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

// pass takes this process out of key's line and, when the lock is free, nominates the next
// process (waiting.go rule 7): none of its waiters is left to take the lock up.
func (n *nominator) pass(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := n.sub.mode.run(ctx, n.rdb, script.RLockPassCall(key, time.Now().UnixMilli(), n.id, n.sharded(ctx))).Err()
	if err != nil {
		n.sub.log.Debug("pass the nomination on", "key", key, "err", err)
	}
}

// releaseAsk is ask as this process releases it (script/lua/rlock_release.lua): in the line,
// staying in it until its last waiter's deadline when it has waiters left (Until; zero: it
// leaves).
func (n *nominator) releaseAsk(ctx context.Context, ask core.Ask) core.Ask {
	ask.Line, ask.Until, ask.Sharded, ask.Now = n.id, n.queue.lastDeadline(ask.Key), n.sharded(ctx), time.Now()
	return ask
}

// sharded is the scripts' flag for sharded pub/sub, where the unlock message always goes out
// (pubsub_sharded.go's rule S2).
func (n *nominator) sharded(ctx context.Context) bool { return n.sub.mode.useSharded(ctx) }
