package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// releaseGate makes a lease's Release retryable when it could not reach Redis. The first call
// does the lease's local bookkeeping (watchdog, hold counts) once; a call whose Redis command did
// not get through (ErrUnavailable, or its context ended) reopens the gate, so a later Release
// sends the command again instead of answering "already released" while the key stays in Redis
// for the rest of its lease. Two calls never send it at once.
type releaseGate struct{ state atomic.Int32 }

const (
	gateHeld int32 = iota
	gateReleasing
	gateReleased
	gateRetry
)

// release is one Release of a lease of key through the gate, the same for every kind: a lease
// released already (or being released by another call) only executes the holder's pipeline p
// and is ErrNotHeld; the first call does the lease's local bookkeeping (first: stop its
// watchdog, count a hold less; nil: none); then send sends the release, again on a later call
// when it could not reach Redis.
func (g *releaseGate) release(ctx context.Context, p redis.Pipeliner, key string, first func(), send func() error) error {
	isFirst, ok := g.begin()
	if !ok {
		execHeld(ctx, p)
		return fmt.Errorf("%w: %s: this lease was already released", ErrNotHeld, key)
	}
	if isFirst && first != nil {
		first()
	}
	return g.end(send())
}

// begin reports whether this call may send the release (ok) and whether it is the first (first:
// do the local bookkeeping).
func (g *releaseGate) begin() (first, ok bool) {
	if g.state.CompareAndSwap(gateHeld, gateReleasing) {
		return true, true
	}
	return false, g.state.CompareAndSwap(gateRetry, gateReleasing)
}

// end records the outcome of the release: a failure to reach Redis may be retried.
func (g *releaseGate) end(err error) error {
	if retryable(err) {
		g.state.Store(gateRetry)
		return err
	}
	g.state.Store(gateReleased)
	return err
}

// released reports whether a release has begun (the lease is no longer held to renew).
func (g *releaseGate) released() bool { return g.state.Load() != gateHeld }

// settled reports whether the release got through (nothing left to retry).
func (g *releaseGate) settled() bool { return g.state.Load() == gateReleased }

// releaseRetry is how often a give-back that got no answer is sent again (core's give-back policy).
const releaseRetry = core.ReleaseRetry

// resend sends send, a command that gives something back (a release, a leave, an orphan's
// give-back), again every releaseRetry while it gets no answer, each send bounded by
// releaseTimeout, until it is answered (nil, or an error that is not retryable), the client is
// closed, ctx ends, or the next send would come after giveUp; it returns the last error. It is
// the one policy of every give-back.
func resend(ctx context.Context, giveUp time.Time, send func(context.Context) error) error {
	return resendOn(&sendBound{Context: ctx}, giveUp, send)
}

// giveBackOnce sends send, a give-back its waiter does not wait for (a leave of a line or a
// queue), once, bounded by releaseTimeout on base. ctx is the acquisition's: the send goes through
// offload, so an acquisition running in its caller's goroutine sends it from its crew. When it
// gets no answer it is sent again in the background by resend on base, until within after that
// first send. A give-back that fails in the end is logged as what, with key and field (when set).
func giveBackOnce(ctx, base context.Context, log *slog.Logger, what, key, field string, within time.Duration, send func(context.Context) error) {
	_, err := offload(ctx, func() (struct{}, error) {
		ctx, cancel := context.WithTimeout(base, releaseTimeout)
		defer cancel()
		return struct{}{}, send(ctx)
	})
	if !answered(err) {
		giveUp := time.Now().Add(within)
		go func() { warnGiveBack(log, what, key, field, resend(base, giveUp, send)) }()
		return
	}
	warnGiveBack(log, what, key, field, err)
}

// warnGiveBack logs err, the last error of a give-back, as what failed for key and field (when
// set); nil is not logged.
func warnGiveBack(log *slog.Logger, what, key, field string, err error) {
	switch {
	case err == nil:
	case field == "":
		log.Warn(what, "key", key, "err", err)
	default:
		log.Warn(what, "key", key, "field", field, "err", err)
	}
}

// resendOn is resend on b's context, b's bound moved for each send (a release's is a field of its
// pendingRelease, which allocates nothing more).
func resendOn(b *sendBound, giveUp time.Time, send func(context.Context) error) error {
	ctx := b.Context
	for {
		b.until = time.Now().Add(releaseTimeout)
		err := send(b)
		if answered(err) || !time.Now().Add(releaseRetry).Before(giveUp) || !sleep(ctx, releaseRetry) {
			return err
		}
	}
}

// sendBound is ctx with a deadline for one send: its Deadline is the earlier of ctx's and until;
// its end and values are ctx's. A client with ContextTimeoutEnabled sets that deadline on the
// connection, so a send that gets no answer fails by then (an i/o timeout: ErrUnavailable); a
// default client bounds it by its ReadTimeout, as it did a context.WithTimeout's, which go-redis
// does not watch during a read either. That would cost a timer, a done channel and a cancel on
// every release.
type sendBound struct {
	context.Context
	until time.Time
}

func (c *sendBound) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.until) {
		return d, true
	}
	return c.until, true
}

// answered reports whether a give-back needs no resending: it got an answer (nil, or an error
// that is not retryable), or never can (a closed client).
func answered(err error) bool {
	return err == nil || !retryable(err) || errors.Is(err, redis.ErrClosed)
}

// retryable reports whether a failed release may be tried again: the command may not have reached
// Redis, so the lock may still be ours.
func retryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
