package lab_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock/locktest"

	"seckill/lab"
)

// TestScenariosLeaveNoGoroutines: after each Redlock scenario (those that stop and restart
// masters, where a line's subscription to a stopped master used to stay parked in the library),
// the process is back to the goroutines it had after the first.
func TestScenariosLeaveNoGoroutines(t *testing.T) {
	if !locktest.Alone(t) { // counted in a process of its own, beside the other tests
		return
	}
	r := newRunner(t)
	names := []string{"redlock", "redlock-restart"}
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
	base := len(settle(-1))
	for _, name := range names {
		if _, err := r.RunAll(ctx, []string{name}); err != nil {
			t.Fatal(err)
		}
		if left := settle(base); len(left) > base {
			t.Errorf("after %s: %d goroutines of this repository's code, %d after the first scenario:\n%s",
				name, len(left), base, strings.Join(left, "\n\n"))
		}
	}
}

// ours lists the goroutines running this repository's code (the library's, the service's), but
// this test's own: an in-process Redis restarted by the lab keeps goroutines of its own that are
// not ours to count.
func ours() []string {
	buf := make([]byte, 1<<22)
	var out []string
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "seckill") && !strings.Contains(g, "TestScenariosLeaveNoGoroutines") {
			out = append(out, g)
		}
	}
	return out
}

// settle waits up to 3 s for our goroutines to drop to want (-1: just to stop changing), and
// returns them.
func settle(want int) []string {
	deadline := time.Now().Add(3 * time.Second)
	gs := ours()
	for time.Now().Before(deadline) && (want < 0 || len(gs) > want) {
		time.Sleep(50 * time.Millisecond)
		now := ours()
		if want < 0 && len(now) == len(gs) {
			return now
		}
		gs = now
	}
	return gs
}
