package lock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
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
// a master that restarts without its data: it forgets the counter with the key. Either round
// failing gives the lock back, and the attempt counts as lost.
//
// The rounds are core.Redlock's; askMasters sends each (redlock.go's try).

// askMasters runs ask on every master at once, each bounded by perNode on a context the caller
// cannot cancel, and returns the answers in master order (miss where none came).
func askMasters[T any](ctx context.Context, masters []redis.UniversalClient, perNode time.Duration, miss T,
	ask func(context.Context, redis.UniversalClient) (T, error)) []T {
	out := make([]T, len(masters))
	var wg sync.WaitGroup
	for i, m := range masters {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), perNode)
			defer cancel()
			v, err := ask(nctx, m)
			if err != nil {
				v = miss
			}
			out[i] = v
		})
	}
	wg.Wait()
	return out
}

// fencing sends call, a fencing round, to every master (core.NoReply where no answer came).
func (l *redlockLocker) fencing(ctx context.Context, perNode time.Duration, call script.Call) []int64 {
	return askMasters(ctx, l.masters, perNode, int64(core.NoReply), func(ctx context.Context, m redis.UniversalClient) (int64, error) {
		return run(ctx, m, call).Int64()
	})
}
