package conformance

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestClosedLockersLeaveNoGoroutines: a Locker whose waiters met a master that was down, then
// closed with its clients, leaves no goroutine behind (a Redlock line's subscription to the
// stopped master used to stay parked for good).
func TestClosedLockersLeaveNoGoroutines(t *testing.T) {
	if !locktest.Alone(t) { // counted in a process of its own, beside the other tests
		return
	}
	servers := locktest.NewN(t, 3)
	before := runtime.NumGoroutine()
	func() {
		var masters []redis.UniversalClient
		for _, s := range servers {
			c := s.Client()
			defer c.Close()
			masters = append(masters, c)
		}
		servers[2].Stop()
		for _, k := range conformanceKinds {
			if !k.masters {
				continue
			}
			l, err := k.build(nil, masters, k.opts...)
			if err != nil {
				t.Fatal(err)
			}
			holder, err := l.Acquire(context.Background(), "goroutines-"+k.name, lock.Options{Wait: 2 * time.Second})
			if err != nil && k.name != "multilock" { // multilock needs every master
				t.Fatalf("%s: %v", k.name, err)
			}
			if holder != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, _ = l.Acquire(ctx, "goroutines-"+k.name, lock.Options{Wait: time.Second})
				cancel()
				_ = holder.Release(context.Background())
			}
			_ = l.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after closing, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
