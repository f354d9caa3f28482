package lock

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestPatternMessageHandledOnce: the fair lock's waiters of one process share one pattern per
// key, and a message on it is for one waiter only; it is handled once, not once per waiter.
func TestPatternMessageHandledOnce(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	rdb := locktest.NewClient(t, srv)
	s := newSubscriber(rdb, slog.New(slog.DiscardHandler), nil, func(p string) bool { return p == fairGrantMessage })
	t.Cleanup(func() { _ = s.Close() })
	const pattern = "handled-once:p:*"
	var calls atomic.Int64
	var ready <-chan struct{}
	for range 5 {
		h := s.joinPattern(t.Context(), pattern, func(ch, payload string) {
			if ch == "handled-once:p:w" && payload == fairGrantMessage {
				calls.Add(1)
			}
		})
		ready = h.ready
	}
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("the pattern subscription was never confirmed")
	}
	if err := rdb.Publish(t.Context(), "handled-once:p:w", fairGrantMessage).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for copies to arrive
	if n := calls.Load(); n != 1 {
		t.Fatalf("one message handled %d times by 5 listeners of its pattern, want once", n)
	}
}

// TestRingMayLeave: a listener rung by a message may leave its channel from the ring itself, as
// a queue whose last waiter the ring served does (the reentrant lock's nominations did, and the
// subscriber's receive loop deadlocked on its own mutex); later listeners are still rung.
func TestRingMayLeave(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	rdb := locktest.NewClient(t, srv)
	s := newSubscriber(rdb, slog.New(slog.DiscardHandler), nil, func(string) bool { return true })
	t.Cleanup(func() { _ = s.Close() })
	const ch = "ring-may-leave"
	left := make(chan struct{})
	var h waitHandle
	h = s.listen(t.Context(), ch, false, func(_, _ string) {
		s.leave(h) // from the ring: must not wait for the receive loop that rings it
		close(left)
	})
	select {
	case <-h.ready:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription was never confirmed")
	}
	if err := rdb.Publish(t.Context(), ch, "x").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-left:
	case <-time.After(5 * time.Second):
		t.Fatal("a ring that leaves its channel never returned: the receive loop is stuck")
	}
	// The receive loop goes on: a second listener hears a message.
	heard := make(chan struct{}, 1)
	h2 := s.listen(t.Context(), ch+"-2", false, func(_, _ string) {
		select {
		case heard <- struct{}{}:
		default:
		}
	})
	<-h2.ready
	if err := rdb.Publish(t.Context(), ch+"-2", "x").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("the receive loop stopped after a ring left its channel")
	}
}
