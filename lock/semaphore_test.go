package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/script"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// newSemaphore is a Semaphore on c, closed when the test ends.
func newSemaphore(t *testing.T, c redis.UniversalClient) *lock.Semaphore {
	t.Helper()
	s, err := lock.NewSemaphore(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestSemaphoreBadInput: bad names, counts and options are refused with an error naming them,
// and nothing is written to Redis.
func TestSemaphoreBadInput(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newSemaphore(t, c)
	ctx := t.Context()
	if _, err := s.TrySetPermits(ctx, "", 3); err == nil {
		t.Error("TrySetPermits with an empty name: no error")
	}
	if _, err := s.TrySetPermits(ctx, "sem-bad", 0); err == nil {
		t.Error("TrySetPermits(0): no error")
	}
	if err := s.Acquire(ctx, "sem-bad", -1, time.Second); err == nil || errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("Acquire(-1): %v, want a plain error", err)
	}
	if err := s.Acquire(ctx, "sem-{bad", 1, 0); err == nil {
		t.Error("Acquire of a name with an open brace: no error")
	}
	if err := s.Acquire(ctx, "sem-bad", 1, -time.Second); err == nil {
		t.Error("Acquire with a negative wait: no error")
	}
	if ok, err := s.TryAcquire(ctx, "sem-bad", 0); ok || err == nil {
		t.Errorf("TryAcquire(0): %v %v, want an error", ok, err)
	}
	if err := s.Release(ctx, "sem-bad", 0); err == nil {
		t.Error("Release(0): no error")
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("%d keys after bad calls (%v), want none", n, err)
	}
	if _, err := lock.NewSemaphore(c, lock.WithLease(time.Second)); err == nil {
		t.Error("NewSemaphore(WithLease): no error")
	}
	if _, err := lock.NewSemaphore(nil); !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("NewSemaphore(nil): %v, want ErrUnavailable", err)
	}
}

// TestSemaphorePermitsStayWithinLimit: goroutines of two processes (two Semaphores) take and give
// back permits; never more than the limit hold at once, the count never leaves 0..limit, and every
// permit is back at the end.
func TestSemaphorePermitsStayWithinLimit(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	a, b := newSemaphore(t, c), newSemaphore(t, c)
	const name, limit, workers, rounds = "sem-limit", 3, 8, 4
	if ok, err := a.TrySetPermits(t.Context(), name, limit); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	var holding, most atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		s := []*lock.Semaphore{a, b}[w%2]
		wg.Go(func() {
			for range rounds {
				if err := s.Acquire(context.Background(), name, 1, 10*time.Second); err != nil {
					t.Error(err)
					return
				}
				now := holding.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				n, err := c.Get(context.Background(), name).Int()
				if err != nil || n < 0 || n > limit {
					t.Errorf("count %d (%v) while held, want 0..%d", n, err, limit)
				}
				holding.Add(-1)
				if err := s.Release(context.Background(), name, 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > limit {
		t.Errorf("%d held at once, limit %d", m, limit)
	}
	if n, err := a.AvailablePermits(t.Context(), name); n != limit || err != nil {
		t.Errorf("%d permits at the end (%v), want %d", n, err, limit)
	}
}

// TestSemaphoreReleaseWakesWaiter: a waiter for a permit sends nothing while none is free, and a
// release (from another process) wakes it long before its wait ends.
func TestSemaphoreReleaseWakesWaiter(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	waiterClient := redis.NewClient(c.Options())
	t.Cleanup(func() { _ = waiterClient.Close() })
	count := locktest.Count(waiterClient)
	holder, waiter := newSemaphore(t, c), newSemaphore(t, waiterClient)
	const name = "sem-wake"
	if _, err := holder.TrySetPermits(t.Context(), name, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := holder.TryAcquire(t.Context(), name, 1); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- waiter.Acquire(context.Background(), name, 1, 20*time.Second) }()
	waitSubscribed(t, c, "redisson_sc:{"+name+"}")
	tries := count.Script(script.SemAcquire)
	time.Sleep(200 * time.Millisecond) // a poller would try here
	if more := count.Script(script.SemAcquire) - tries; more > 1 {
		t.Errorf("%d attempts while no permit was free: the waiter polls", more)
	}
	released := time.Now()
	if err := holder.Release(t.Context(), name, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
	t.Logf("woken %s after the release", time.Since(released))
}

// TestSemaphoreWaitEnds: a wait with no release ends with ErrNotObtained, a cancelled one joins
// ctx.Err(), and Close ends a wait with ErrClosed.
func TestSemaphoreWaitEnds(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newSemaphore(t, c)
	const name = "sem-ends"
	if err := s.Acquire(t.Context(), name, 1, 50*time.Millisecond); !errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("a semaphore never set: %v, want ErrNotObtained", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Acquire(ctx, name, 1, time.Second); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v, want ErrNotObtained and context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Acquire(context.Background(), name, 1, 20*time.Second) }()
	waitSubscribed(t, c, "redisson_sc:{"+name+"}")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, lock.ErrClosed) {
		t.Errorf("a wait ended by Close: %v, want ErrNotObtained and ErrClosed", err)
	}
}

// TestSemaphoreRedissonProtocol: the key and channel a Java client reads and writes. A count set
// with SET as Redisson's trySetPermits does is taken from Go; Go's release publishes the count on
// redisson_sc:{name}; a Java-style release (INCRBY, then PUBLISH of the count) wakes a Go waiter.
func TestSemaphoreRedissonProtocol(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newSemaphore(t, c)
	ctx := t.Context()
	const name, channel = "sem-java", "redisson_sc:{sem-java}"
	if err := c.Set(ctx, name, "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.TrySetPermits(ctx, name, 5); ok || err != nil {
		t.Errorf("TrySetPermits over Java's count: %v %v, want false", ok, err)
	}
	if err := s.Acquire(ctx, name, 2, 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(ctx, name).Result(); v != "0" {
		t.Errorf("the key holds %q after taking both, want \"0\"", v)
	}
	ps := c.Subscribe(ctx, channel)
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, name, 1); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "1" {
		t.Errorf("release message %v (%v), want the count \"1\"", m, err)
	}
	if err := s.Acquire(ctx, name, 1, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Acquire(context.Background(), name, 1, 20*time.Second) }()
	waitSubscribed(t, c, channel)
	v, err := c.IncrBy(ctx, name, 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctx, channel, v).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Java-style release did not wake the Go waiter")
	}
	if ok, err := s.TrySetPermits(ctx, "sem-{tag}x", 4); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	if v, _ := c.Get(ctx, "sem-{tag}x").Result(); v != "4" {
		t.Errorf("TrySetPermits wrote %q, want \"4\"", v)
	}
}
