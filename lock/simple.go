package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/internal/ctxsleep"
)

// plainLease is the Lease of NewLua: no watchdog, no fencing (Lease.Lost follows its TTL).
type plainLease struct {
	*lineHold // when it runs out, and the push of a lock handed over short
	key       string
	gate      releaseGate
	// release gives the lock back, after the holder's pipeline p when there is one (runScript).
	release func(ctx context.Context, p redis.Pipeliner) error
	renew   func(ctx context.Context) error
}

func (l *plainLease) refresh(ctx context.Context) error {
	if l.gate.state.Load() != gateHeld {
		return fmt.Errorf("%w: %s: this lease was released", ErrNotHeld, l.key)
	}
	return l.renew(ctx)
}

func (l *plainLease) Key() string           { return l.key }
func (l *plainLease) Token() int64          { return 0 }
func (l *plainLease) Lost() <-chan struct{} { return nil }

func (l *plainLease) Release(ctx context.Context) error { return l.releaseAfter(ctx, nil) }

func (l *plainLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	if _, ok := l.gate.begin(); !ok {
		execHeld(ctx, p)
		return ErrNotHeld
	}
	return l.gate.end(l.release(ctx, p))
}

// sleep waits for d or until ctx ends, whichever is first; it reports whether d elapsed.
var sleep = ctxsleep.Sleep

// jitter returns a retry interval between lo and hi, so that pollers do not move in lockstep.
func jitter(lo, hi time.Duration) func() time.Duration {
	return func() time.Duration { return lo + rand.N(hi-lo+1) }
}

// leaseOrDefault is the lease an acquisition asks for, or the mode's default.
func leaseOrDefault(opts Options, def time.Duration) time.Duration {
	if opts.Lease > 0 {
		return opts.Lease
	}
	return def
}
