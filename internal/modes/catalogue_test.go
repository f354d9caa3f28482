package modes_test

import (
	"context"
	"testing"
	"time"

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

// TestFairQueueShownByInspect: the /locks view reads the queue and each waiter's deadline.
func TestFairQueueShownByInspect(t *testing.T) {
	c := testredis.Client(t, testredis.Start(t))
	reg, err := modes.NewRegistry(modes.Deps{Data: c, InstanceID: "inst", Lease: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	l, _, err := reg.Locker("fair")
	if err != nil {
		t.Fatal(err)
	}
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
	var ks modes.KeyState
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ks = modes.KeyState{}
		for _, srv := range reg.Inspect(t.Context(), "{sku}:lock:") {
			for _, k := range srv.Keys {
				if k.Key == key {
					ks = k
				}
			}
		}
		if len(ks.Queue) > 0 {
			break
		}
	}
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
