package modes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/modes"
	"seckill/internal/testredis"
)

func TestRedlockRegistered(t *testing.T) {
	m, err := modes.LookupMode("redlock")
	if err != nil {
		t.Fatal(err)
	}
	if m.Row != 9 || !m.Safe || m.Atomic {
		t.Fatalf("mode = %+v, want row 9, safe, not atomic", m)
	}
	for _, f := range []string{modes.FaultWork, modes.FaultCrashAfterLock, modes.FaultHolderPause} {
		if !m.Supports(f) {
			t.Errorf("redlock should support %s", f)
		}
	}
	if m.Supports(modes.FaultCrashBeforeExpire) || m.Supports(modes.FaultPauseBeforeDel) {
		t.Errorf("redlock must not support the setnx/uuid faults: %v", m.Faults)
	}
}

// fairRegistry is a registry on a test Redis with its fair Locker.
func fairRegistry(t *testing.T) (*modes.Registry, modes.Locker, *redis.Client) {
	t.Helper()
	c := testredis.Client(t, testredis.Start(t))
	reg, err := modes.NewRegistry(modes.Deps{Data: c, InstanceID: "inst", Options: []lock.Option{lock.WithLease(5 * time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	l, _, err := reg.Locker("fair")
	if err != nil {
		t.Fatal(err)
	}
	return reg, l, c
}

// skuLock names the lock key of each mode for the SKU "sku".
func skuLock(mode string) string { return "{sku}:lock:" + mode }

// inspectUntil polls the /locks view of key until ok holds of it (3 s at most).
func inspectUntil(t *testing.T, reg *modes.Registry, key, what string, ok func(modes.KeyState) bool) modes.KeyState {
	t.Helper()
	var ks modes.KeyState
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ks = modes.KeyState{}
		for _, srv := range reg.Inspect(t.Context(), "{sku}:lock:", skuLock) {
			for _, k := range srv.Keys {
				if k.Key == key {
					ks = k
				}
			}
		}
		if ok(ks) {
			return ks
		}
	}
	t.Fatalf("%s: not seen in 3 s (%+v)", what, ks)
	return ks
}

// TestFairQueueShownByInspect: the /locks view reads the queue and each waiter's deadline.
func TestFairQueueShownByInspect(t *testing.T) {
	reg, l, _ := fairRegistry(t)
	const key = "{sku}:lock:fair"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if le, err := l.Acquire(context.Background(), key, lock.Options{Owner: "next", Wait: 3 * time.Second}); err == nil {
			_ = le.Release(context.Background())
		}
	}()
	ks := inspectUntil(t, reg, key, "a waiter", func(ks modes.KeyState) bool { return len(ks.Queue) > 0 })
	if len(ks.Holders) != 1 || ks.Holders[0].Owner != "holder" {
		t.Fatalf("holders %+v", ks.Holders)
	}
	if len(ks.Queue) != 1 {
		t.Fatalf("queue %+v, want the one waiter", ks.Queue)
	}
	w := ks.Queue[0]
	if w.Owner != "next" || !w.ThisInstance || w.DeadlineMs <= time.Now().UnixMilli() {
		t.Fatalf("waiter %+v: want owner next, this instance, a deadline ahead", w)
	}
	_ = h.Release(t.Context())
	<-done
}

// TestFairDeadlinesShownAsRedissonWould: after a hand-over the waiters behind the first owe the
// move-up (lock/script/lua/fair_lag.lua) and their scores are that much later; the /locks view shows
// the deadlines Redisson's scripts would have written, a thread wait apart along the queue.
func TestFairDeadlinesShownAsRedissonWould(t *testing.T) {
	reg, l, c := fairRegistry(t)
	const key, wait = "{sku}:lock:fair", 3 * time.Second
	// A hand-over moves the queue up by the releasing holder's wait.
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder", Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{}) // w0 holds the lock until the test has looked
	done := make(chan struct{}, 3)
	for i := range 3 {
		go func() {
			defer func() { done <- struct{}{} }()
			le, err := l.Acquire(context.Background(), key, lock.Options{Owner: fmt.Sprint("w", i), Wait: wait})
			if err != nil {
				t.Errorf("w%d: %v", i, err)
				return
			}
			if i == 0 {
				<-held
			}
			_ = le.Release(context.Background())
		}()
		inspectUntil(t, reg, key, fmt.Sprint("w", i, " queued"), func(ks modes.KeyState) bool { return len(ks.Queue) == i+1 })
	}
	if err := h.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	ks := inspectUntil(t, reg, key, "w0 holding, w1 and w2 queued", func(ks modes.KeyState) bool {
		return len(ks.Queue) == 2 && len(ks.Holders) == 1 && ks.Holders[0].Owner == "w0"
	})
	lag, err := int64(0), redis.Nil
	for _, k := range l.Keys(key)[1:] { // the library's lag hash, the one with field x
		if n, herr := c.HGet(t.Context(), k, "x").Int64(); herr == nil {
			lag, err = n, nil
		}
	}
	if err != nil || lag < wait.Milliseconds() {
		t.Fatalf("the waiter behind the first owes %d ms (%v), want at least one thread wait: nothing to subtract", lag, err)
	}
	w1, w2 := ks.Queue[0], ks.Queue[1]
	if w1.Owner != "w1" || w2.Owner != "w2" {
		t.Fatalf("queue %+v, want w1 then w2", ks.Queue)
	}
	if gap := w2.DeadlineMs - w1.DeadlineMs; gap != wait.Milliseconds() {
		t.Errorf("w2's deadline is %d ms after w1's, want one thread wait (%d ms); scores owe %d ms",
			gap, wait.Milliseconds(), lag)
	}
	close(held)
	for range 3 {
		<-done
	}
}

// TestFencedLayoutShownByInspect: WithRFencedLockLayout (lock.fencedLayout: redisson) reaches the
// library, and the /locks view shows the lock as a Redisson hash held by this instance and
// RFencedLock's counter as a fencing counter, kept without TTL.
func TestFencedLayoutShownByInspect(t *testing.T) {
	c := testredis.Client(t, testredis.Start(t))
	reg, err := modes.NewRegistry(modes.Deps{Data: c, InstanceID: "inst", Options: []lock.Option{lock.WithLease(5 * time.Second), lock.WithRFencedLockLayout().Optional()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	l, _, err := reg.Locker("fenced")
	if err != nil {
		t.Fatal(err)
	}
	const key = "{sku}:lock:fenced"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(t.Context()) }()
	got := map[string]modes.KeyState{}
	for _, srv := range reg.Inspect(t.Context(), "{sku}:lock:", skuLock) {
		for _, k := range srv.Keys {
			got[k.Key] = k
		}
	}
	// RFencedLock's counter is among the keys the library names beside the lock.
	var counter modes.KeyState
	for _, k := range l.Keys(key)[1:] {
		if got[k].Type == "string" {
			counter = got[k]
		}
	}
	ks := got[key]
	if ks.Type != "hash" || len(ks.Holders) != 1 || ks.Holders[0].Owner != "holder" || !ks.Holders[0].ThisInstance {
		t.Fatalf("lock %+v: want RLock's hash held by this instance's owner", ks)
	}
	if counter.Kind != "fencing counter" || counter.Value != "1" || counter.PTTLMs != -1 || counter.Deadlock {
		t.Fatalf("counter %+v: want a fencing counter at 1, no TTL, not a deadlock", counter)
	}
	if h.Token() != 1 {
		t.Fatalf("token %d, want 1", h.Token())
	}
}
