package fault_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testredis"
	"seckill/lab/fault"
)

// counting counts the commands that reach the server side of the hook chain.
type counting struct{ n atomic.Int64 }

func (c *counting) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counting) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counting) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

func setup(t *testing.T) (*redis.Client, *counting) {
	t.Helper()
	c := testredis.Client(t, testredis.Start(t))
	fault.Install(c)
	fault.Install(c) // a second Install must not add a second hook
	cnt := &counting{}
	c.AddHook(cnt)
	return c, cnt
}

func TestCrashedHolderSendsNothing(t *testing.T) {
	c, cnt := setup(t)
	ctx, h := fault.Attach(t.Context(), fault.Plan{})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("before the crash: %v", err)
	}
	h.Crash()
	before := cnt.n.Load()
	if err := c.Set(ctx, "k", "w", 0).Err(); !errors.Is(err, fault.ErrCrashed) {
		t.Fatalf("a crashed holder's SET = %v, want ErrCrashed", err)
	}
	// The watchdog's context: the acquisition's values without its cancellation.
	bg := context.WithoutCancel(ctx)
	if _, err := c.Pipelined(bg, func(p redis.Pipeliner) error { p.Get(bg, "k"); return nil }); !errors.Is(err, fault.ErrCrashed) {
		t.Fatalf("a crashed holder's pipeline = %v, want ErrCrashed", err)
	}
	if n := cnt.n.Load() - before; n != 0 {
		t.Fatalf("%d commands of the crashed holder reached the client", n)
	}
	// Everyone else is untouched.
	if v := c.Get(t.Context(), "k").Val(); v != "v" {
		t.Fatalf("GET without a holder = %q, want the value from before the crash", v)
	}
}

func TestPausedHolderCommandsWaitForTheEndOfThePause(t *testing.T) {
	c, _ := setup(t)
	ctx, h := fault.Attach(t.Context(), fault.Plan{})
	const pause = 300 * time.Millisecond
	paused := make(chan struct{})
	go func() {
		defer close(paused)
		h.Freeze(ctx, pause)
	}()
	time.Sleep(pause / 10)
	start := time.Now()
	if err := c.Ping(context.WithoutCancel(ctx)).Err(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < pause/2 {
		t.Fatalf("a command sent during the pause went through after %s, want it held until the pause ends (%s)", waited, pause)
	}
	<-paused
	start = time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > pause/2 {
		t.Fatalf("a command after the pause took %s", el)
	}
	// A command held by the pause still ends with its own context.
	go h.Freeze(ctx, pause)
	time.Sleep(pause / 10)
	short, cancel := context.WithTimeout(ctx, pause/5)
	defer cancel()
	if err := c.Ping(short).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held command with a short deadline = %v, want DeadlineExceeded", err)
	}
}

func TestPauseAfterReplyIsNotCutShort(t *testing.T) {
	c, _ := setup(t)
	const pause = 150 * time.Millisecond
	ctx, _ := fault.Attach(t.Context(), fault.Plan{PauseAfterReply: pause})
	short, cancel := context.WithTimeout(ctx, pause/10)
	defer cancel()
	start := time.Now()
	err := c.Set(short, "k", "v", 0).Err()
	if took := time.Since(start); took < pause {
		t.Fatalf("the reply came back after %s, want the whole pause %s even past the command's deadline", took, pause)
	}
	if err != nil {
		t.Fatalf("the command itself = %v, want it done before the pause", err)
	}
	if v := c.Get(t.Context(), "k").Val(); v != "v" {
		t.Fatalf("the SET was not sent before the pause: %q", v)
	}
}

func TestStepKnobs(t *testing.T) {
	ctx := t.Context()
	if err := fault.BeforeExpire(ctx, "k"); err != nil {
		t.Fatalf("BeforeExpire without a holder = %v", err)
	}
	crash, h := fault.Attach(ctx, fault.Plan{CrashBeforeExpire: true})
	if err := fault.BeforeExpire(crash, "k"); !errors.Is(err, fault.ErrCrashed) || !h.Crashed() {
		t.Fatalf("BeforeExpire with the crash planned = %v (crashed %v), want ErrCrashed", err, h.Crashed())
	}
	const pause = 100 * time.Millisecond
	p, _ := fault.Attach(ctx, fault.Plan{PauseBeforeDel: pause})
	start := time.Now()
	if err := fault.BeforeDel(p, "k"); err != nil || time.Since(start) < pause {
		t.Fatalf("BeforeDel = %v after %s, want nil after %s", err, time.Since(start), pause)
	}
	cancelled, cancel := context.WithCancel(p)
	cancel()
	if err := fault.BeforeDel(cancelled, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("BeforeDel with the context gone = %v, want context.Canceled", err)
	}
}
