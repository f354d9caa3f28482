package simulate

import (
	"slices"
	"strings"
	"testing"

	"seckill/internal/modes"
)

// notSimulated lists the lab's modes the simulator does not run, each with the reason. Empty:
// every mode of the catalogue has its kind. A mode added to internal/modes fails
// TestSimulatorCoversEveryMode until it is simulated or listed here with why not.
var notSimulated = map[string]string{}

// TestSimulatorCoversEveryMode: every mode of the lab's catalogue (internal/modes) is a kind of
// the simulator by the same name, or an explicit exception; and no exception is stale.
func TestSimulatorCoversEveryMode(t *testing.T) {
	t.Parallel()
	names := modes.Names()
	if len(names) == 0 {
		t.Fatal("the catalogue lists no mode")
	}
	for _, m := range names {
		_, simulated := kinds[m]
		why, excepted := notSimulated[m]
		switch {
		case !simulated && !excepted:
			t.Errorf("mode %s of internal/modes has no simulated kind (add one, or list it in notSimulated with the reason)", m)
		case simulated && excepted:
			t.Errorf("mode %s is simulated and listed as not simulated (%s): drop the exception", m, why)
		}
	}
	for m := range notSimulated {
		if !slices.Contains(names, m) {
			t.Errorf("notSimulated names %s, which is not a mode of the catalogue", m)
		}
	}
}

// TestLabModesNoneAtomicRedlockFenced: none loses an update with no fault at all; atomic holds
// under every fault but a restart without data, which the checker reports as the data loss it
// is; redlock-fenced holds where redlock does not (a clock jump), and not where its counter
// is lost with a restarted master (two holders draw the same token).
func TestLabModesNoneAtomicRedlockFenced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind   string
		rounds int
		faults []string
		want   string // prefix of the shortest violation ("": none allowed)
	}{
		{"none", 1, nil, "mutual exclusion"},
		{"atomic", 2, nil, ""},
		{"atomic", 2, []string{FaultCrash, FaultPause, FaultMasterDown, FaultClockFast}, ""},
		{"atomic", 2, []string{FaultRestartEmpty}, "data loss"},
		{"redlock-fenced", 1, nil, ""}, // also the sound side of the mutant no-token-step (TestMutantsFound)
	} {
		cfg := Config{Kind: tc.kind, Clients: 2, Rounds: tc.rounds, Faults: tc.faults, MaxFaults: 1}
		r := mustSim(t, cfg).Exhaustive(t.Context())
		switch {
		case !r.Complete:
			t.Errorf("%s %v: search not complete", tc.kind, tc.faults)
		case tc.want == "" && r.Violations != 0:
			t.Errorf("%s %v: %d violations, shortest %q", tc.kind, tc.faults, r.Violations, r.Shortest.Violation)
		case tc.want != "" && (r.Shortest == nil || !strings.HasPrefix(r.Shortest.Violation, tc.want)):
			t.Errorf("%s %v: %d violations, shortest %+v; want %q", tc.kind, tc.faults, r.Violations, r.Shortest, tc.want)
		case tc.want != "":
			if out, err := NewReplayFile(cfg, r.Shortest).Replay(2); err != nil || out.Reproduced != 2 || !out.Identical {
				t.Errorf("%s: replay %+v, %v", tc.kind, out, err)
			}
		}
	}
}

// drive applies the choices named by plan (Choice.String) in turn, and fails when one is not on
// offer.
func drive(t *testing.T, s *Sim, plan ...string) *World {
	t.Helper()
	w := s.Start()
	for n, want := range plan {
		ch := s.Choices(w)
		i := slices.IndexFunc(ch, func(c Choice) bool { return c.String() == want })
		if i < 0 {
			t.Fatalf("step %d: %q not offered (%v)\n%s", n+1, want, ch, strings.Join(w.Trace(), "\n"))
		}
		s.Apply(w, ch[i], i)
	}
	return w
}

// TestRedlockFencedTokenStopsTheStaleWrite: one schedule, three ends. The asks of a round go to
// the masters in the order the scheduler picks (the library sends them at once): c1 asks m2 and
// wins it, c2 wins m1, c1 loses m1 and wins m0; then m0 jumps its clock (or restarts empty) and
// c2 wins it: two holders at once. Plain redlock loses c2's update; with tokens, after a clock
// jump the counter on m0 is still there, c2 draws token 2, its read fences out c1's write with
// token 1; after a restart the counter on m0 is gone with the key, c2 draws token 1 again and
// both writes land.
func TestRedlockFencedTokenStopsTheStaleWrite(t *testing.T) {
	t.Parallel()
	won := func(c string, fenced bool) []string {
		if !fenced {
			return nil
		}
		round := []string{"step " + c + " m0", "step " + c + " m1", "step " + c + " m2"}
		return slices.Concat(round, round) // the read and raise rounds
	}
	for _, tc := range []struct {
		kind, fault, want string
	}{
		{"redlock", FaultClockFast, "mutual exclusion"},
		{"redlock-fenced", FaultClockFast, ""},
		{"redlock-fenced", FaultRestartEmpty, "mutual exclusion"},
	} {
		s := mustSim(t, Config{Kind: tc.kind, Clients: 2, Faults: []string{tc.fault}, MaxFaults: 1})
		fenced := tc.kind == "redlock-fenced"
		plan := []string{"step c1 m2", "step c2 m1", "step c1 m1", "step c1 m0"} // m0: c1; m1: c2; m2: c1
		plan = append(plan, won("c1", fenced)...)
		plan = append(plan, "fault "+tc.fault+" c1 m0", "step c2 m0", "step c2 m2") // c2 wins m0, loses m2
		plan = append(plan, won("c2", fenced)...)
		plan = append(plan, "time", "step c1", "step c1", "step c2", "step c2") // check, write; check, write
		w := drive(t, s, plan...)
		refused := strings.Contains(strings.Join(w.Trace(), "\n"), "write v1 token 1 -> refused (newest token 2)")
		if (tc.want == "" && (w.Violation != "" || !refused)) || !strings.HasPrefix(w.Violation, tc.want) {
			t.Errorf("%s, %s: %q, want %q\n%s", tc.kind, tc.fault, w.Violation, tc.want, strings.Join(w.Trace(), "\n"))
		}
	}
}

// TestStockAndFenceCheckersAreNotVacuous: atomic's verdict reports a decrement with no sale and a
// sale with no decrement, a stock below zero and a stock key gone; the fenced read refuses an
// older token once a newer one has read, and that holder goes to release without writing.
func TestStockAndFenceCheckersAreNotVacuous(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "atomic", Clients: 2})
	k := atomicKind{}
	for _, tc := range []struct {
		stock string
		sold  int
		want  string
	}{
		{"0", 1, "lost update"}, // stock 1 went to 0 with no order recorded
		{"1", 1, "lost update"}, // a sale acknowledged, no decrement
		{"-1", 2, "oversold"},
		{"", 0, "data loss"},
	} {
		w := s.Start()
		w.Res.Sold = tc.sold
		w.Masters[0].Data = nil
		if tc.stock != "" {
			w.Masters[0].Data = redisState{{Key: atomicKeys.Stock, Type: "string", Str: tc.stock}}
		}
		if got := k.settled(s, w); !strings.HasPrefix(got, tc.want) {
			t.Errorf("stock %q, %d sold: %q, want %q", tc.stock, tc.sold, got, tc.want)
		}
	}
	if got := k.settled(s, s.Start()); !strings.HasPrefix(got, "stock left") {
		t.Errorf("nothing sold with no fault: %q", got)
	}
	f := mustSim(t, Config{Kind: "redlock-fenced", Clients: 2})
	w := f.Start()
	a, b := &w.Clients[0], &w.Clients[1]
	f.enter(w, b, 2)
	f.enter(w, a, 1)
	if a.PC != pcRelease || w.Res.MaxToken != 2 {
		t.Errorf("a read with token 1 after token 2 was not refused: %s, newest %d", a.PC, w.Res.MaxToken)
	}
}
