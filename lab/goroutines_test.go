package lab_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"seckill/lab"
)

// TestScenariosLeaveNoGoroutines: after each Redlock scenario (those that stop and restart
// masters, where a line's subscription to a stopped master used to stay parked in the library),
// the process is back to the goroutines it had after the first. Not parallel: it counts the
// process's goroutines before the parallel tests start.
func TestScenariosLeaveNoGoroutines(t *testing.T) {
	r := newRunner(t)
	names := []string{"redlock", "redlock-restart", "redlock-fenced-restart"}
	for _, name := range names {
		if _, err := lab.Lookup(name); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	// The first run starts what lives as long as the runner's clients.
	if _, err := r.RunAll(ctx, names[:1]); err != nil {
		t.Fatal(err)
	}
	base := settle(0)
	for _, name := range names {
		if _, err := r.RunAll(ctx, []string{name}); err != nil {
			t.Fatal(err)
		}
		if n := settle(base); n > base {
			buf := make([]byte, 1<<20)
			var ours []string
			for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(g, "seckill") {
					ours = append(ours, g)
				}
			}
			t.Errorf("after %s: %d goroutines, %d after the first scenario:\n%s", name, n, base, strings.Join(ours, "\n\n"))
		}
	}
}

// settle waits up to 3 s for the goroutine count to drop to want (0: just let it settle), and
// returns it.
func settle(want int) int {
	deadline := time.Now().Add(3 * time.Second)
	n := runtime.NumGoroutine()
	for time.Now().Before(deadline) && (want == 0 || n > want) {
		time.Sleep(50 * time.Millisecond)
		m := runtime.NumGoroutine()
		if want == 0 && m == n {
			return n
		}
		n = m
	}
	return n
}
