package lock

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock/locktest"
)

// TestPatternMessageHandledOnce: the fair lock's waiters of one process share one pattern per
// key, and a message on it is for one waiter only; it is handled once, not once per waiter.
func TestPatternMessageHandledOnce(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	rdb := locktest.NewClient(t, srv)
	s := newSubscriber(rdb, slog.New(slog.DiscardHandler), func(p string) bool { return p == fairGrantMessage })
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
