// Retrying: the pause between attempts and how many broken connections a wait rides out.

package lock

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/lockutil"
)

// sleep waits for d or until ctx ends, whichever is first; it reports whether d elapsed.
var sleep = lockutil.Sleep

// jitter returns a retry interval between lo and hi, so that pollers do not move in lockstep.
func jitter(lo, hi time.Duration) func() time.Duration {
	return func() time.Duration { return lo + rand.N(hi-lo+1) }
}

// brokenRetry is a waiting acquisition's policy for an attempt that failed on a connection that
// broke under it (ErrUnavailable, not from a refused dial: a pooled connection a restarted Redis
// dropped, one a Sentinel client closed when it switched masters): try again after 20, 40 and
// 80 ms, while the wait has time for it. A Redis that refuses connections fails the wait at
// once, and one that stays away within about 150 ms, not at the wait's end. The count starts
// again after an attempt that got an answer.
type brokenRetry struct{ failed int }

// again sleeps and reports true when the attempt that failed with err is to be made again.
func (r *brokenRetry) again(ctx context.Context, err error, deadline time.Time) bool {
	pause, ok := core.BrokenRetry(r.failed, time.Until(deadline))
	var op *net.OpError
	refused := errors.As(err, &op) && op.Op == "dial"
	if !ok || refused || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		return false
	}
	r.failed++
	return sleep(ctx, pause)
}

// answered resets the count after an attempt that got an answer.
func (r *brokenRetry) answered() { r.failed = 0 }
