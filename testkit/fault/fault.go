// Package fault injects the faults of one lock holder from outside the lock, through its Redis
// connection: a crash, a stop-the-world pause, a pause after a reply. It does not import package
// testing, so a program (a fault lab) may link it; that is why it lives beside package locktest,
// which is for tests only, and not in it. Package locktest re-exports it for tests.
package fault

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The faults of one lock holder, injected from outside the lock through its Redis connection.
//
// Code that may meet a fault runs under [Attach], which puts a [Holder] in its context. The locks
// pass that context's values on to every command they send for the acquisition, the watchdog's
// renewals included, so the go-redis hook that [Install] adds to the clients acts for this holder
// alone:
//
//   - [Holder.Crash]: the process dies. Every later command of the holder fails with [ErrCrashed]
//     before it reaches Redis, so nothing is renewed and nothing is released; the lock is freed
//     only by its TTL.
//   - [Holder.Freeze]: a stop-the-world pause (a long GC). The caller sleeps, and any command the
//     holder's other goroutines send meanwhile (a renewal) waits until the pause is over.
//   - [Plan.PauseAfterReply]: a pause between a reply's arrival and the holder reading it.

// ErrCrashed is what a crashed holder's commands, and an acquisition that died half way, fail with.
var ErrCrashed = errors.New("fault: the holder crashed (injected)")

// Plan lists the faults a holder meets on the wire.
type Plan struct {
	// PauseAfterReply: the holder is paused this long each time a reply has come back, before it
	// reads it (a pause between sending its commands and acting on their replies: Redlock's
	// elapsed-time check is what must catch it). Like the pause it stands for, no deadline cuts
	// it short.
	PauseAfterReply time.Duration
}

// Holder is the fault state of one lock holder (one sale).
type Holder struct {
	plan        Plan
	crashed     atomic.Bool
	frozenUntil atomic.Int64 // unix nanoseconds; 0: not frozen
}

type holderKey struct{}

// Attach returns a context carrying a new Holder with plan, and the Holder.
func Attach(ctx context.Context, plan Plan) (context.Context, *Holder) {
	h := &Holder{plan: plan}
	return context.WithValue(ctx, holderKey{}, h), h
}

// From returns the Holder in ctx, or nil.
func From(ctx context.Context) *Holder {
	h, _ := ctx.Value(holderKey{}).(*Holder)
	return h
}

// Crash kills the holder: from now on every command it sends fails with ErrCrashed.
func (h *Holder) Crash() { h.crashed.Store(true) }

// Crashed reports whether the holder has crashed.
func (h *Holder) Crashed() bool { return h.crashed.Load() }

// Freeze pauses the holder for d: the caller sleeps d (or until ctx ends), and the holder's
// commands sent meanwhile wait for the end of the pause.
func (h *Holder) Freeze(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	until := time.Now().Add(d)
	h.frozenUntil.Store(until.UnixNano())
	defer h.frozenUntil.Store(0)
	sleep(ctx, d)
}

// gate is the hook's check before a command of h: it fails it if h crashed, and holds it while
// h is frozen.
func (h *Holder) gate(ctx context.Context) error {
	if h.crashed.Load() {
		return ErrCrashed
	}
	if until := h.frozenUntil.Load(); until != 0 {
		thaw := time.Unix(0, until)
		if d, ok := ctx.Deadline(); ok && d.Before(thaw) {
			// A frozen server does not answer before the command's deadline: the command fails
			// then (a client with ContextTimeoutEnabled sets that deadline on its connection).
			if !sleep(ctx, time.Until(d)) || ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("fault: frozen holder past the command's deadline: %w", context.DeadlineExceeded)
		}
		if !sleep(ctx, time.Until(thaw)) {
			return ctx.Err()
		}
		if h.crashed.Load() {
			return ErrCrashed
		}
	}
	return nil
}

// hook is the go-redis hook that applies a Holder's crash and freeze to its commands.
type hook struct{}

func (hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h := From(ctx)
		if h == nil {
			return next(ctx, cmd)
		}
		if err := h.gate(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		err := next(ctx, cmd)
		h.afterReply()
		return err
	}
}

func (hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h := From(ctx)
		if h == nil {
			return next(ctx, cmds)
		}
		if err := h.gate(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		err := next(ctx, cmds)
		h.afterReply()
		return err
	}
}

// afterReply is the planned pause between a reply's arrival and the holder acting on it.
func (h *Holder) afterReply() {
	if d := h.plan.PauseAfterReply; d > 0 {
		time.Sleep(d)
	}
}

// installed remembers the clients that carry the hook, so Install adds it once per client.
var installed sync.Map

// Install adds the fault hook to each client, once per client however often it is called. A
// command whose context carries no Holder passes straight through.
func Install(clients ...redis.UniversalClient) {
	for _, c := range clients {
		if c == nil {
			continue
		}
		if _, dup := installed.LoadOrStore(c, true); !dup {
			c.AddHook(hook{})
		}
	}
}

// sleep waits for d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
