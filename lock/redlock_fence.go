package lock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
)

// Fencing tokens for Redlock (mode redlock-fenced, WithFencingTokens).
//
// Redlock hands out no token: Kleppmann's critique is that nothing then stops a holder whose lock
// expired early (a paused process, a master whose clock jumped) from writing after the next
// holder. Here every acquisition draws one from a counter kept on the masters beside the lock key
// (<key>:token), in two rounds run right after the lock is won:
//
//  1. read: on every master where this acquisition still holds the key, read the counter; a
//     majority must answer. The token is the largest value read, plus one.
//  2. raise: on every master where it still holds the key, raise the counter to the token; a
//     majority must agree.
//
// Why a later holder B always gets a larger token than A: A raised the counter to its token on a
// majority while it held the key there, and B reads the counter on a majority where it holds the
// key. Two majorities share a master; B's key can only be there after A's is gone, so B reads it
// after A's raise: B's token ≥ A's + 1. That holds across clock jumps and pauses, but not across
// a master that restarts without its data: it forgets the counter with the key. Either round failing gives the lock back, and the attempt counts as
// lost.
// drawToken runs the two rounds for the acquisition that holds key with value. Each master gets
// at most perNode per round.
func (l *redlockLocker) drawToken(ctx context.Context, key, value string, perNode time.Duration) (int64, error) {
	read := l.onMasters(ctx, perNode, func(ctx context.Context, m redis.UniversalClient) (int64, error) {
		return run(ctx, m, script.RedlockTokenReadCall(key, value)).Int64()
	})
	var token int64
	held := 0
	for _, r := range read {
		if r.err == nil && r.v >= 0 {
			held++
			token = max(token, r.v)
		}
	}
	if held < l.quorum {
		return 0, fmt.Errorf("redlock %s: token counter read on %d of %d masters (quorum %d): %w", key, held, l.nodes, l.quorum, errLost)
	}
	token++
	raised := l.onMasters(ctx, perNode, func(ctx context.Context, m redis.UniversalClient) (int64, error) {
		return run(ctx, m, script.RedlockTokenRaiseCall(key, value, token)).Int64()
	})
	held = 0
	for _, r := range raised {
		if r.err == nil && r.v == 1 {
			held++
		}
	}
	if held < l.quorum {
		return 0, fmt.Errorf("redlock %s: token %d raised on %d of %d masters (quorum %d): %w", key, token, held, l.nodes, l.quorum, errLost)
	}
	return token, nil
}

type nodeReply struct {
	v   int64
	err error
}

// onMasters runs fn on every master at once, each bounded by perNode, and returns the replies in
// master order.
func (l *redlockLocker) onMasters(ctx context.Context, perNode time.Duration, fn func(context.Context, redis.UniversalClient) (int64, error)) []nodeReply {
	out := make([]nodeReply, len(l.masters))
	var wg sync.WaitGroup
	for i, m := range l.masters {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, perNode)
			defer cancel()
			out[i].v, out[i].err = fn(nctx, m)
		})
	}
	wg.Wait()
	return out
}
