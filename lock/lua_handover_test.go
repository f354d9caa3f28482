package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLuaHandsOverWithinOneProcess: with no other process waiting, a release hands the lock
// straight to this process's next waiter: the waiter holds it without sending a command of its
// own, and the lock key carries the waiter's value at once.
func TestLuaHandsOverWithinOneProcess(t *testing.T) {
	srv := hoStart(t)
	ls, data, _ := hoLockers(t, srv, "lua", 1, 5*time.Second)
	l := ls[0]
	key := "{ho}:lock:handover"
	first, err := l.Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lease, 1)
	go func() {
		le, err := l.Acquire(t.Context(), key, Options{Wait: 5 * time.Second})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- le
	}()
	time.Sleep(150 * time.Millisecond) // the waiter failed once and subscribed
	before, err := data.Get(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := handoverRelease.Load(t.Context(), data).Err(); err != nil { // EVALSHA finds it
		t.Fatal(err)
	}
	srv.calls.Reset()
	if err := first.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	le := <-got
	if le == nil {
		t.FailNow()
	}
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("the release and the waiter's acquisition sent %d commands, want 1 (the release script alone)", n)
	}
	if v, err := data.Get(t.Context(), key).Result(); err != nil || v == before {
		t.Errorf("lock key holds %q (%v) after the handover, want the waiter's value, not the first holder's %q", v, err, before)
	}
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := data.Exists(t.Context(), key).Result(); n != 0 {
		t.Errorf("lock key still there after the last release")
	}
}

// TestLuaHandoverDoesNotStarveOtherProcesses: one process with a crowd of buyers, another with a
// single one. The crowd's releases would keep the lock among themselves if they always handed
// it over; since the other process's waiter listens on the channel, they delete and publish
// instead, and that waiter gets its share.
func TestLuaHandoverDoesNotStarveOtherProcesses(t *testing.T) {
	ls, _, _ := hoLockers(t, hoStart(t), "lua", 2, 5*time.Second)
	key := "{ho}:lock:lopsided"
	stop := time.Now().Add(600 * time.Millisecond)
	var crowd, lone atomic.Int64
	var wg sync.WaitGroup
	buyer := func(l *Locker, n *atomic.Int64) {
		for time.Now().Before(stop) {
			le, err := l.Acquire(t.Context(), key, Options{Wait: 3 * time.Second})
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			time.Sleep(200 * time.Microsecond)
			n.Add(1)
			if err := le.Release(context.Background()); err != nil {
				t.Errorf("release: %v", err)
				return
			}
		}
	}
	for range 8 {
		wg.Go(func() { buyer(ls[0], &crowd) })
	}
	wg.Go(func() { buyer(ls[1], &lone) })
	wg.Wait()
	// A fair split would give the lone buyer 1/9; it must get at least a fifth of that.
	c, o := crowd.Load(), lone.Load()
	if o*45 < c+o {
		t.Fatalf("the lone buyer in the other process got %d of %d acquisitions: starved by the handovers", o, c+o)
	}
	t.Logf("crowd of 8: %d acquisitions; lone buyer in another process: %d", c, o)
}

// TestLuaHandoverToAWaiterThatLeft: a release wrote the head's value into the lock, but the head
// had left the line (its wait ended) before the grant was recorded: nobody holds that lock, so
// it is deleted, not left to expire.
func TestLuaHandoverToAWaiterThatLeft(t *testing.T) {
	ls, data, _ := hoLockers(t, hoStart(t), "lua", 1, 5*time.Second)
	l := ls[0].impl.(*luaLocker)
	key := "{ho}:lock:left"
	first, err := l.Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, key, Options{Wait: 5 * time.Second})
		done <- err
	}()
	var next *place
	for deadline := time.Now().Add(time.Second); next == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		next, _ = l.line.offer(key)
	}
	if next == nil {
		t.Fatal("the waiter never became the head of the line")
	}
	cancel()
	if err := <-done; !errors.Is(err, ErrNotObtained) {
		t.Fatalf("waiter: %v, want ErrNotObtained", err)
	}
	// What the release script does when it hands over, then the grant that comes too late.
	if err := data.Set(t.Context(), key, next.value, 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if l.line.grant(key, next) {
		t.Fatal("granted to a waiter that had left")
	}
	l.dropOrphan(key, next.value)
	if n, err := data.Exists(t.Context(), key).Result(); err != nil || n != 0 {
		t.Fatalf("the lock handed to the departed waiter is still there (%d, %v)", n, err)
	}
	_ = first // its value was overwritten above; nothing to release
}
