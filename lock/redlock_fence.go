package lock

import (
	"context"
	"sync"
	"time"

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
// The rounds are core.Redlock's; onMasters sends each.

// onMasters runs call on every master at once, each bounded by perNode, and returns the replies
// in master order (core.NoReply where none came).
func (l *redlockLocker) onMasters(ctx context.Context, perNode time.Duration, call script.Call) []int64 {
	out := make([]int64, len(l.masters))
	var wg sync.WaitGroup
	for i, m := range l.masters {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), perNode)
			defer cancel()
			v, err := run(nctx, m, call).Int64()
			if err != nil {
				v = core.NoReply
			}
			out[i] = v
		})
	}
	wg.Wait()
	return out
}
