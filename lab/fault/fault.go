// Package fault injects the lab's faults into a lock holder from outside the lock package, the way
// they happen to a real process: through its Redis connection and its own goroutine.
//
// The crash, the stop-the-world pause and the pause after a reply are the lock library's own test
// hook (package testkit/fault): a sale that may meet a fault runs under [Attach], and the hook that
// [Install] adds to the clients acts for that holder alone. The two faults that hit a deliberately
// broken mode between its two non-atomic steps are [BeforeExpire] and [BeforeDel], the knobs those
// modes offer (modes.StepHooks).
package fault

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill-lab/seckill/lock/lockutil"
	lockfault "github.com/seckill-lab/seckill/testkit/fault"

	"seckill/internal/modes"
)

// ErrCrashed is what a crashed holder's commands, and an acquisition that died half way, fail with.
var ErrCrashed = lockfault.ErrCrashed

// Holder is the fault state of one lock holder (one sale).
type Holder = lockfault.Holder

// Plan lists the faults a holder meets inside the lock's own steps.
type Plan struct {
	// CrashBeforeExpire: setnx-expire dies between its SETNX and its EXPIRE.
	CrashBeforeExpire bool
	// PauseBeforeDel: uuid sleeps this long between its value check and its DEL.
	PauseBeforeDel time.Duration
	// PauseAfterReply: the holder is paused this long each time a reply has come back, before it
	// reads it (a pause between sending its commands and acting on their replies: Redlock's
	// elapsed-time check is what must catch it). Like the pause it stands for, no deadline cuts
	// it short.
	PauseAfterReply time.Duration
}

type planKey struct{}

// Attach returns a context carrying a new Holder with plan, and the Holder.
func Attach(ctx context.Context, plan Plan) (context.Context, *Holder) {
	ctx, h := lockfault.Attach(ctx, lockfault.Plan{PauseAfterReply: plan.PauseAfterReply})
	return context.WithValue(ctx, planKey{}, plan), h
}

// From returns the Holder in ctx, or nil.
func From(ctx context.Context) *Holder { return lockfault.From(ctx) }

// Install adds the fault hook to each client, once per client however often it is called. A
// command whose context carries no Holder passes straight through.
var Install = lockfault.Install

func planOf(ctx context.Context) Plan {
	p, _ := ctx.Value(planKey{}).(Plan)
	return p
}

// Steps are the broken modes' knobs wired to the lab's faults.
func Steps() modes.StepHooks {
	return modes.StepHooks{BeforeExpire: BeforeExpire, BeforeDel: BeforeDel}
}

// BeforeExpire is setnx-expire's knob between SETNX and EXPIRE: with CrashBeforeExpire planned,
// the holder dies there.
func BeforeExpire(ctx context.Context, key string) error {
	h := From(ctx)
	if h == nil || !planOf(ctx).CrashBeforeExpire {
		return nil
	}
	h.Crash()
	return fmt.Errorf("%w: SETNX %s done, EXPIRE never sent: the key has no TTL", ErrCrashed, key)
}

// BeforeDel is uuid's knob between its value check and its DEL: it sleeps the planned pause.
func BeforeDel(ctx context.Context, key string) error {
	d := planOf(ctx).PauseBeforeDel
	if From(ctx) == nil || d <= 0 {
		return nil
	}
	if !lockutil.Sleep(ctx, d) {
		return fmt.Errorf("fault: pause before DEL of %s: %w", key, ctx.Err())
	}
	return nil
}
