package lab_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/testkit/locktest"

	"seckill/internal/testredis"
	"seckill/lab"
)

// TestScenariosLeaveNoGoroutines: after every scenario of lab.Scenarios() the process is back to
// the goroutines of this repository's code it had after a first run (a Redlock line's
// subscription to a stopped master used to stay parked in the library). The scenarios mostly
// wait, so four runners, each on servers of its own, run them four at a time; after each
// round the count must be back, and a round that leaves more names its scenarios. Every
// scenario with the long repetitions (SECKILL_TEST_LONG=1, as CI's -race step runs it, about
// 26 s); otherwise those on the independent masters (multilock, redlock, redlock-fenced), where
// the goroutines stayed, which keeps the default run about 14 s shorter.
func TestScenariosLeaveNoGoroutines(t *testing.T) {
	if !locktest.Alone(t) { // counted in a process of its own, beside the other tests
		return
	}
	runners := []*lab.Runner{newRunner(t), newRunner(t), newRunner(t), newRunner(t)}
	var names []string
	for _, sc := range lab.Scenarios() {
		switch {
		case testredis.Long(), sc.Mode == "multilock", strings.HasPrefix(sc.Mode, "redlock"):
			names = append(names, sc.Name)
		}
	}
	if testredis.Long() && len(names) != len(lab.Names()) {
		t.Fatalf("%d names for %d scenarios", len(lab.Names()), len(names))
	}
	start := time.Now()
	// The first run on each runner starts what lives as long as the runner's clients.
	if err := runRound(runners, []string{names[0], names[0], names[0]}); err != nil {
		t.Fatal(err)
	}
	base := len(settle(-1))
	for i := 0; i < len(names); i += len(runners) {
		round := names[i:min(i+len(runners), len(names))]
		if err := runRound(runners, round); err != nil {
			t.Fatal(err)
		}
		if left := settle(base); len(left) > base {
			t.Errorf("after %s: %d goroutines of this repository's code, %d after the first scenario:\n%s",
				strings.Join(round, ", "), len(left), base, strings.Join(left, "\n\n"))
		}
	}
	t.Logf("%d scenarios, %d at a time, took %s", len(names), len(runners), time.Since(start).Round(100*time.Millisecond))
}

// runRound runs the named scenarios at once, the i-th on runners[i].
func runRound(runners []*lab.Runner, names []string) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { _, errs[i] = runners[i].RunAll(context.Background(), []string{name}) })
	}
	wg.Wait()
	return errors.Join(errs...)
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
