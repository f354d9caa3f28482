package lock

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// locker is what every lock implements; Locker wraps one.
type locker interface {
	Acquire(ctx context.Context, key string, opts Options) (heldLock, error)
	Close() error
}

// heldLock is what every lock's lease implements; Lease wraps one. A Release that failed on a
// transient error (the server did not answer, the context ended) leaves it releasable again.
type heldLock interface {
	Key() string
	Token() int64
	Lost() <-chan struct{}
	Release(ctx context.Context) error
	refresh(ctx context.Context) error
}

// pipelineReleaser is implemented by the leases whose release can join the holder's pipeline
// (Lease.ReleaseAfter).
type pipelineReleaser interface {
	releaseAfter(ctx context.Context, p redis.Pipeliner) error
}

// runScript runs a release script on rdb, after p, the holder's pipeline of last commands, when
// there is one (nil: the script alone). On a client that sends a pipeline on one connection, in
// order (a plain or Sentinel-managed one), the script joins the end of p: one round trip, and
// Redis runs the holder's commands first. A Cluster or Ring client splits a pipeline by server,
// so there p is executed first and the script follows on its own; so does a script Redis does not
// know yet (NOSCRIPT: EVALSHA in a pipeline cannot fall back to EVAL).
func runScript(ctx context.Context, p redis.Pipeliner, rdb redis.UniversalClient, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	if _, oneConn := rdb.(*redis.Client); p == nil || !oneConn {
		execHeld(ctx, p)
		return sc.Run(ctx, rdb, keys, args...)
	}
	cmd := sc.EvalSha(ctx, p, keys, args...)
	execHeld(ctx, p)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return sc.Run(ctx, rdb, keys, args...)
	}
	return cmd
}

// execHeld executes the holder's pipeline p, if there is one. Each command carries its own
// error, for the holder to read.
func execHeld(ctx context.Context, p redis.Pipeliner) {
	if p != nil {
		_, _ = p.Exec(ctx)
	}
}

// renewer is implemented by the leases with a watchdog.
type renewer interface{ Renewals() int64 }

// hashLease is implemented by the leases in Redisson's hash layout.
type hashLease interface{ Field() string }

// partsLease is implemented by the multilock's lease.
type partsLease interface{ Parts() []heldLock }

// ownerOf is the owner of one acquisition: opts.Owner, or a new one for this acquisition alone.
func ownerOf(opts Options) string {
	if opts.Owner != "" {
		return opts.Owner
	}
	return uuid.NewString()
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
	pause := time.Duration(20<<r.failed) * time.Millisecond
	var op *net.OpError
	refused := errors.As(err, &op) && op.Op == "dial"
	if r.failed >= 3 || refused || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil || !time.Now().Add(pause).Before(deadline) {
		return false
	}
	r.failed++
	return sleep(ctx, pause)
}

// answered resets the count after an attempt that got an answer.
func (r *brokenRetry) answered() { r.failed = 0 }
