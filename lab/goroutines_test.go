package lab_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"seckill/lab"
)

// TestScenariosLeaveNoGoroutines: after each Redlock scenario (those that stop and restart
// masters, where a line's subscription to a stopped master used to stay parked in the library),
// the process is back to the goroutines it had after the first.
func TestScenariosLeaveNoGoroutines(t *testing.T) {
	if os.Getenv(goroutinesChild) == "" {
		// Counted in a process of its own (this test binary again), so it can run beside the
		// lab's other tests instead of before them.
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestScenariosLeaveNoGoroutines$", "-test.count=1")
		cmd.Env = append(os.Environ(), goroutinesChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("the count in a process of its own: %v\n%s", err, out)
		}
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

// goroutinesChild marks the process that counts (TestScenariosLeaveNoGoroutines).
const goroutinesChild = "SECKILL_GOROUTINES_CHILD"

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
