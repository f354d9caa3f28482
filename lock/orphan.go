// An attempt whose answer never came (waiting.go rule 9): what it may still take is given back.

package lock

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// orphans are the release-if-mine commands of one acquisition's attempts that got no answer.
// Such an attempt may still run: a client that ends a blocked call when its context ends
// (go-redis's ContextTimeoutEnabled, as the service's clients) closes the connection and loses
// the answer, not the command, which a frozen Redis runs at its thaw. With nobody waiting for
// it, a lock it takes would stay for its lease, renewed and released by nobody.
//
// On a kind that counts an owner's holds (Redisson's hash), the acquisition's next attempt, made
// with the same owner, re-enters what such an attempt took: one hold won, two counted. settle
// gives the extra back when the acquisition wins.
type orphans struct {
	mu     sync.Mutex
	byID   map[string]func(context.Context) error
	settle map[string]func(context.Context) error
}

// orphaned records, after an attempt of the acquisition running under ctx that failed with err,
// the kind's release-if-mine for what that attempt may still take (id names it, so an attempt
// made again records it once), when err says the answer never came. giveBack checks the value or
// owner in Redis, so it never frees another's lock; it answers ErrNotHeld (or nil) when there
// was nothing of its own, and an error retryable says when it got no answer.
// settle, when not nil, is the counting kind's: it gives back the holds of the owner's field
// beyond those this process knows of.
func orphaned(ctx context.Context, err error, id string, giveBack, settle func(context.Context) error) {
	// ErrNotReplicated is an answer: the attempt ran, and the kind has given back what it took.
	if err == nil || !retryable(err) || errors.Is(err, ErrNotReplicated) || neverSent(err) {
		return
	}
	if c, ok := ctx.Value(attemptKey{}).(*attemptClock); ok {
		c.orphans.add(id, giveBack, settle)
	}
}

// leaveAtEnd records, for the acquisition running under ctx, a give-back of what a kind keeps in
// Redis for the acquisition's next attempt when its Locker rides a transient failure (a place in a
// queue): it is sent when the acquisition ends without the lock, as the orphans' are, and
// dropped when it wins (the place was used).
func leaveAtEnd(ctx context.Context, id string, giveBack func(context.Context) error) bool {
	c, ok := ctx.Value(attemptKey{}).(*attemptClock)
	if ok {
		c.orphans.add(id, giveBack, nil)
	}
	return ok
}

// add records giveBack, and settle when not nil, under id (once, however often it is added).
func (o *orphans) add(id string, giveBack, settle func(context.Context) error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byID == nil {
		o.byID = map[string]func(context.Context) error{}
		o.settle = map[string]func(context.Context) error{}
	}
	o.byID[id] = giveBack
	if settle != nil {
		o.settle[id] = settle
	}
}

// neverSent reports whether err says the command never reached a server: the connection was
// refused (a dial that failed), or the server replied that it would not run it (loading,
// read-only). Such an attempt takes nothing, and a give-back for it could only free a later hold
// of the same owner.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var reply redis.Error
	return errors.As(err, &reply)
}

// giveBack sends, in the background, the release-if-mine of every attempt of an acquisition that
// ended without the lock and got no answer (waiting.go rule 9), by the give-back policy (resend)
// for a lease at most, and once more after the first answer: that answer proves Redis has run
// what was queued before it, the orphaned attempt included, so the second finds what it took.
func (o *orphans) giveBack(ctx context.Context, lease time.Duration) {
	o.mu.Lock()
	fs := o.byID
	o.byID, o.settle = nil, nil
	o.mu.Unlock()
	giveUp := time.Now().Add(lease)
	for _, f := range fs {
		go giveBackOrphan(ctx, giveUp, f)
	}
}

// won settles, once the acquisition has won, the counts of the attempts that got no answer
// (settle), in the caller's goroutine, each bounded by releaseTimeout: a failure leaves an extra
// hold until the lease ends, as before. An attempt that runs after its settle keeps what it took
// until its lease ends.
func (o *orphans) won(ctx context.Context) {
	o.mu.Lock()
	fs := o.settle
	o.byID, o.settle = nil, nil
	o.mu.Unlock()
	for _, f := range fs {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		_ = f(sctx)
		cancel()
	}
}

// giveBackOrphan sends the give-back of one attempt that got no answer by the give-back policy
// (resend) until giveUp, and once more after an answer (a success or a refusal): an attempt that
// runs after both keeps what it took until its lease ends.
func giveBackOrphan(ctx context.Context, giveUp time.Time, giveBack func(context.Context) error) {
	if err := resend(ctx, giveUp, giveBack); err == nil || !retryable(err) {
		_ = resend(ctx, giveUp, giveBack) // once more, after the answer
	}
}

// settleHolds gives back, with release, the holds field counts in the hash key beyond those this
// process knows of (holds[id], read under mu): what an attempt that got no answer added to a won
// hold of the same owner (orphans.won).
func settleHolds(ctx context.Context, rdb redis.Cmdable, key, field string, mu *sync.Mutex, holds holdCount, id string,
	release func(context.Context) error) error {
	n, err := rdb.HGet(ctx, key, field).Int()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return redisErr("count the holds of "+key, err)
	}
	mu.Lock()
	own := holds[id]
	mu.Unlock()
	for range core.ExtraHolds(n, own) {
		if err := release(ctx); err != nil {
			return err
		}
	}
	return nil
}
