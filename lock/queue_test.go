package lock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestQueue: Locker.Queue lists a fair lock's waiters in order with their deadlines (the first
// one's: the holder's TTL plus its wait; the next one's chained after it), and the kinds without
// a queue in Redis list none.
func TestQueue(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease, wait = 5 * time.Second, 3 * time.Second
	a, b := fairLocker(t, c, "inst-a", lease), fairLocker(t, c, "inst-b", lease)
	const key = "queue-read"
	la, err := a.Acquire(t.Context(), key, lock.Options{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan struct{}, 2)
	for _, owner := range []string{"b", "c"} {
		go func() {
			defer func() { done <- struct{}{} }()
			if lb, err := b.Acquire(context.Background(), key, lock.Options{Owner: owner, Wait: wait}); err == nil {
				_ = lb.Release(context.Background())
			}
		}()
		waitQueue(t, c, key, map[string]int{"b": 1, "c": 2}[owner])
	}
	fields, deadlines, err := a.Queue(t.Context(), key)
	if err != nil || !slices.Equal(fields, []string{"inst-b:b", "inst-b:c"}) {
		t.Fatalf("queue %v, %v; want [inst-b:b inst-b:c]", fields, err)
	}
	near := func(got, want time.Time) bool { d := got.Sub(want); return d > -time.Second && d < time.Second }
	if !near(deadlines[0], start.Add(lease+wait)) || !near(deadlines[1], deadlines[0].Add(wait)) {
		t.Errorf("deadlines %v from %v: want the lease and a wait, then one wait more", deadlines, start)
	}
	if err := la.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-done
	<-done
	l, err := lock.NewLua(c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if f, d, err := l.Queue(t.Context(), key); f != nil || d != nil || err != nil {
		t.Errorf("lua's queue: %v %v %v, want none", f, d, err)
	}
}
