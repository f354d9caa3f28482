package lock_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/locktest"
)

// TestClosedLockersLeaveNoGoroutines: a Locker whose waiters met a master that was down, then
// closed with its clients, leaves no goroutine behind (a Redlock line's subscription to the
// stopped master used to stay parked for good).
func TestClosedLockersLeaveNoGoroutines(t *testing.T) {
	if os.Getenv(goroutinesChild) == "" {
		// Counted in a process of its own (this test binary again), so it can run beside the
		// package's other tests instead of before them.
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestClosedLockersLeaveNoGoroutines$", "-test.count=1")
		cmd.Env = append(os.Environ(), goroutinesChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("the count in a process of its own: %v\n%s", err, out)
		}
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

// goroutinesChild marks the process that counts (TestClosedLockersLeaveNoGoroutines).
const goroutinesChild = "LOCKTEST_GOROUTINES_CHILD"
