package lab_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/internal/testredis"
	"seckill/lab"
)

// newRunner gives a Runner over a fresh data Redis and three fresh masters.
func newRunner(t *testing.T) *lab.Runner {
	t.Helper()
	all := testredis.StartN(t, 4)
	data := testredis.Client(t, all[0])
	var masters []redis.UniversalClient
	for _, s := range all[1:] {
		masters = append(masters, testredis.Client(t, s))
	}
	return &lab.Runner{Data: data, Masters: masters, HistoryDir: t.TempDir()}
}

func want(sc lab.Scenario) string {
	if sc.Safe {
		return lab.Held
	}
	return lab.Reproduced
}

// runs is how many times the full lab runs: once by default (every verdict checked), 10 times
// with SECKILL_TEST_LONG=1 (the stability requirement, which CI sets); SECKILL_LAB_RUNS
// overrides both.
func runs(t *testing.T) int {
	if v := os.Getenv("SECKILL_LAB_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SECKILL_LAB_RUNS=%q is not a positive number", v)
		}
		return n
	}
	if testredis.Long() {
		return 10
	}
	return 1
}

// TestLabVerdictsAreStable runs every scenario of rows 1-15 but 12 again and again and requires the
// row's verdict every time: REPRODUCED for the unsafe modes, HELD for the safe ones, and a
// history verdict that agrees with the row's counters (historyAgrees). Row 12 (a Sentinel
// failover, several seconds a run) has its own repeated test.
func TestLabVerdictsAreStable(t *testing.T) {
	t.Parallel() // beside row 12's test, which mostly waits for Sentinel
	rows := map[int]bool{}
	var names []string
	for _, sc := range lab.Scenarios() {
		rows[sc.Row] = true
		if sc.Row != 12 { // row 12 has its own test (it needs Sentinel)
			names = append(names, sc.Name)
		}
	}
	for row := 1; row <= 15; row++ {
		if !rows[row] {
			t.Fatalf("no scenario for row %d of docs/lab.md", row)
		}
	}
	// The scenarios mostly wait (leases, pauses, a Sentinel): four runners, each on servers of
	// its own, share them out and run at once, so a full lab run takes a quarter of the time.
	runners := []*lab.Runner{newRunner(t), newRunner(t), newRunner(t), newRunner(t)}
	n := runs(t)
	var took []string
	for i := range n {
		start := time.Now()
		results, err := runShared(runners, names)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		took = append(took, time.Since(start).Round(10*time.Millisecond).String())
		failed := false
		for _, res := range results {
			sc := lookup(t, res.Name)
			if res.Verdict == lab.Skipped && !redisproc.UseReal() {
				// Only what needs a real redis-server may skip (it names the package).
				t.Logf("run %d: %s skipped: %s", i+1, res.Name, res.Reason)
				continue
			}
			if res.Verdict == lab.Starved {
				// The machine stalled past what the row's lease can outlast: the row was not
				// judged, neither failed nor passed. Run it again, on the same runner's servers.
				res = rerunStarvedScenario(t, runners[0], sc, res)
			}
			if res.Verdict == lab.Starved {
				t.Logf("run %d: %s still STARVED after %d re-runs, not judged: %s", i+1, res.Name, starvedReruns, res.Reason)
				continue
			}
			if res.Verdict != want(sc) {
				failed = true
				t.Errorf("run %d: %s: verdict %s, want %s: %s", i+1, res.Name, res.Verdict, want(sc), res.Reason)
			}
			historyAgrees(t, i+1, res)
		}
		if i == 0 || failed {
			var b bytes.Buffer
			if err := lab.WriteTable(&b, results); err != nil {
				t.Fatal(err)
			}
			if !failed {
				checkTold(t, results) // the lines under the table say what broke, within 120 columns
			}
			if err := lab.WriteDetails(&b, results); err != nil {
				t.Fatal(err)
			}
			t.Logf("run %d:\n%s", i+1, b.String())
		}
	}
	t.Logf("%d full lab runs took %s", n, strings.Join(took, ", "))
}

// starvedReruns is how many times a STARVED row runs again before the test leaves it unjudged.
const starvedReruns = 3

// rerunStarvedScenario runs sc again while its result res is STARVED, at most starvedReruns
// times, and returns the last result.
func rerunStarvedScenario(t *testing.T, r *lab.Runner, sc lab.Scenario, res lab.Result) lab.Result {
	t.Helper()
	for k := 0; k < starvedReruns && res.Verdict == lab.Starved; k++ {
		t.Logf("%s STARVED (%s); running it again", res.Name, res.Reason)
		res = r.Run(context.Background(), sc)
	}
	return res
}

// lookup is the scenario called name.
func lookup(t *testing.T, name string) lab.Scenario {
	t.Helper()
	sc, err := lab.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// fencedOnLua is the fenced row's experiment on a lock with no fencing token: the frozen
// holder's write goes through, and the row must fail.
func fencedOnLua(t *testing.T) lab.Scenario {
	sc := lookup(t, "fenced")
	sc.Name, sc.Mode = "fenced-on-lua", "lua"
	return sc
}

// runShared runs the named scenarios on the runners, which work at once, each taking the next
// scenario when it is done with its last (the rows take from 0 to 3 s: dealt round-robin, a
// runner dealt the long ones finished seconds after the others); the results come back in the
// order of names.
func runShared(runners []*lab.Runner, names []string) ([]lab.Result, error) {
	results := make([]lab.Result, len(names))
	errs := make([]error, len(runners))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w, r := range runners {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(names); i = int(next.Add(1)) - 1 {
				got, err := r.RunAll(context.Background(), names[i:i+1])
				if err != nil {
					errs[w] = err
					return
				}
				results[i] = got[0]
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// TestJudgeCanFail runs the fenced row's experiment with a lock that has no fencing token: the
// frozen holder's write then goes through, and the verdict must say UNEXPECTED.
func TestJudgeCanFail(t *testing.T) {
	t.Parallel() // on servers of its own; a row the machine starved is run again
	sc, r := fencedOnLua(t), newRunner(t)
	res := rerunStarvedScenario(t, r, sc, r.Run(context.Background(), sc))
	if res.Verdict == lab.Starved {
		t.Skipf("the machine stalled through %d runs: %s", starvedReruns+1, res.Reason)
	}
	if res.Verdict != lab.Unexpected {
		t.Fatalf("verdict %s, want %s (checks %+v)", res.Verdict, lab.Unexpected, res.Checks)
	}
	if res.StaleRejected != 0 || !strings.Contains(res.Reason, "stale") {
		t.Fatalf("want no stale write rejected and a reason naming it; got %d, %q", res.StaleRejected, res.Reason)
	}
	if res.Lost == 0 {
		t.Fatalf("without a fence the frozen holder's write should lose an update; lost %d", res.Lost)
	}
}

// TestStallMakesRowsStarved injects a stall longer than the lease into the starvation meter:
// a row that fails (fenced on a lock without a fence), a safe row that holds and an unsafe row
// that reproduces are then all STARVED, with the stall and what the checks said in the reason;
// a stall under 2/3 of the lease changes no verdict.
func TestStallMakesRowsStarved(t *testing.T) {
	broken, atomic, none := fencedOnLua(t), lookup(t, "atomic"), lookup(t, "none")
	r := newRunner(t)
	lease := 300 * time.Millisecond
	r.Lease = lease
	lab.InjectStall(r, 5*lease)
	for _, c := range []struct {
		sc   lab.Scenario
		said string
	}{{broken, lab.Unexpected}, {atomic, lab.Held}, {none, lab.Reproduced}} {
		res := r.Run(context.Background(), c.sc)
		if res.Verdict != lab.Starved {
			t.Errorf("%s: verdict %s under a %s stall, want %s", c.sc.Name, res.Verdict, 5*lease, lab.Starved)
			continue
		}
		wantStall := "the machine stalled " + (5 * lease).String()
		if !strings.HasPrefix(res.Reason, wantStall) || !strings.Contains(res.Reason, "the checks said "+c.said) {
			t.Errorf("%s: reason %q, want it to start %q and name %s", c.sc.Name, res.Reason, wantStall, c.said)
		}
		if res.StallMs < float64((5 * lease).Milliseconds()) {
			t.Errorf("%s: stallMs %.0f, want the injected %s", c.sc.Name, res.StallMs, 5*lease)
		}
	}
	var table bytes.Buffer
	if err := lab.WriteTable(&table, []lab.Result{r.Run(context.Background(), atomic)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "atomic: STARVED: the machine stalled") {
		t.Errorf("the table does not say why the row is STARVED:\n%s", table.String())
	}
	// A long lease here, so that a real stall of this machine stays under its 2/3 too.
	r.Lease = 2 * time.Second
	lab.InjectStall(r, r.Lease/2)
	if res := r.Run(context.Background(), atomic); res.Verdict != lab.Held {
		t.Errorf("atomic under a %s stall: verdict %s (%s), want %s", r.Lease/2, res.Verdict, res.Reason, lab.Held)
	}
}

// TestSlowStepMakesRowStarved: a step the row times that took longer than the row allows it
// (Env.Slow) makes the row STARVED with both durations; one within its allowance changes nothing.
func TestSlowStepMakesRowStarved(t *testing.T) {
	r := newRunner(t)
	r.Lease = 2 * time.Second // a real stall of this machine stays under its 2/3
	row := func(took time.Duration) lab.Scenario {
		return lab.Scenario{Name: "slow-step", Mode: "atomic", Safe: true, Drive: func(_ context.Context, e *lab.Env) error {
			e.Slow("the restart", took, time.Second)
			e.Check("the row's own check", "ok", "ok", true)
			return nil
		}}
	}
	res := r.Run(context.Background(), row(1500*time.Millisecond))
	want := "the machine was too slow for the row: the restart took 1.5s, longer than the 1s the row allows it; the checks said HELD"
	if res.Verdict != lab.Starved || res.Reason != want {
		t.Errorf("got %s %q, want %s %q", res.Verdict, res.Reason, lab.Starved, want)
	}
	if res := r.Run(context.Background(), row(time.Second)); res.Verdict != lab.Held {
		t.Errorf("a step within its allowance: %s %q, want %s", res.Verdict, res.Reason, lab.Held)
	}
}

func TestUnknownModeIsUnexpected(t *testing.T) {
	res := newRunner(t).Run(context.Background(), lab.Scenario{Name: "ghost", Mode: "no-such-mode",
		Drive: func(context.Context, *lab.Env) error { return nil }})
	if res.Verdict != lab.Unexpected || !strings.Contains(res.Reason, "no-such-mode") {
		t.Fatalf("got %s %q", res.Verdict, res.Reason)
	}
}

func TestSelect(t *testing.T) {
	got, err := lab.Select([]string{"atomic", "none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "none" || got[1].Name != "atomic" {
		t.Fatalf("want none, atomic in row order; got %v", got)
	}
	if _, err := lab.Select([]string{"nope"}); !errors.Is(err, lab.ErrUnknownScenario) {
		t.Fatalf("want ErrUnknownScenario, got %v", err)
	}
	for _, sc := range lab.Scenarios() {
		// A mode's own scenario is as safe as the mode; the other scenarios of a mode (row 12's
		// failover, the explicit lease, the unfair line) show where it stops holding.
		if m, err := modes.LookupMode(sc.Mode); err == nil && sc.Name == m.Name && m.Safe != sc.Safe {
			t.Errorf("scenario %s says safe=%v, mode %s says safe=%v", sc.Name, sc.Safe, m.Name, m.Safe)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	rs := []lab.Result{{Name: "x", Row: 1, Mode: "none", Verdict: lab.Unexpected, Reason: "because", History: "n/a: no sales"},
		{Name: "y", Row: 2, Mode: "lua", Verdict: lab.Held, Deadlock: true, History: lab.NotLinearizable}}
	if err := lab.WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"VERDICT", "x: UNEXPECTED: because", "HISTORY", "n/a", "NOT lin."} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	var wide bytes.Buffer
	if err := lab.WriteWideTable(&wide, rs); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"DEADLOCK", "yes", "NOT linearizable", "x: UNEXPECTED: because"} {
		if !strings.Contains(wide.String(), s) {
			t.Errorf("wide table lacks %q:\n%s", s, wide.String())
		}
	}
	if strings.Contains(out, "no sales") {
		t.Errorf("the table's HISTORY column should leave out the reason of n/a:\n%s", out)
	}
	if !lab.AnyUnexpected(rs) || lab.AnyUnexpected(rs[1:]) {
		t.Error("AnyUnexpected is wrong")
	}
}
