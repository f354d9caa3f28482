package simulate

import (
	"path/filepath"
	"strings"
	"testing"
)

func mustSim(t *testing.T, cfg Config) *Sim {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSameSeedSameTrace: one seed gives one trace, byte for byte, on two simulators.
func TestSameSeedSameTrace(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"fenced", "redlock"} {
		cfg := Config{Kind: k, Clients: 3, Rounds: 2, Faults: []string{FaultPause, FaultPubsubDelayed, FaultMasterDown}, MaxFaults: 2}
		a := mustSim(t, cfg).RunSeed(42)
		b := mustSim(t, cfg).RunSeed(42)
		if a.TraceHash() != b.TraceHash() || len(a.Trace()) < 10 {
			t.Errorf("%s: seed 42 gave %s (%d steps) and %s", k, a.TraceHash(), len(a.Trace()), b.TraceHash())
		}
	}
}

// TestBrokenModesFoundAndReplayed: an exhaustive search of a small bound finds each broken
// mode's violation, and its counterexample replays to the same trace.
func TestBrokenModesFoundAndReplayed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    string
		clients int // 2 when 0
		faults  []string
		want    string
	}{
		{"setnx", 0, []string{FaultCrash}, "leftover"},
		{"setnx-expire", 0, []string{FaultCrash}, "leftover"},
		{"uuid", 0, []string{FaultPause}, "mutual exclusion"},
		{"lua", 0, []string{FaultPause}, "mutual exclusion"},
		{"redlock", 0, []string{FaultRestartEmpty}, "mutual exclusion"},
		// Redisson's RSemaphore: a holder that dies keeps its permit for good.
		{"semaphore", 0, []string{FaultCrash}, "permits"},
		// A lease's limit, a pause between the look and the write (or the reader's second read),
		// seen by each side's check: the writer's write after a reader entered, and the reader's.
		{"readwrite", 0, []string{FaultPause}, "mutual exclusion: c1.r0 wrote after c2.r0, a reader"},
		{"readwrite", 3, []string{FaultPause}, "mutual exclusion: reader"},
	} {
		cfg := Config{Kind: tc.kind, Clients: max(tc.clients, 2), Faults: tc.faults, MaxFaults: 1}
		r := mustSim(t, cfg).Exhaustive(t.Context())
		if r.Shortest == nil || !strings.HasPrefix(r.Shortest.Violation, tc.want) {
			t.Errorf("%s %v: %d violations, shortest %+v; want %q", tc.kind, tc.faults, r.Violations, r.Shortest, tc.want)
			continue
		}
		f := NewReplayFile(cfg, r.Shortest)
		out, err := f.Replay(2)
		if err != nil || out.Reproduced != 2 || !out.Identical {
			t.Errorf("%s: replay %+v, %v", tc.kind, out, err)
		}
	}
}

// TestSafeKindsHoldSmallBounds: no violation in the library's kinds within small bounds.
func TestSafeKindsHoldSmallBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind            string
		clients, rounds int // 2 × 1 when 0
		faults          []string
	}{
		{"lua", 0, 0, nil}, {"fenced", 0, 0, []string{FaultPause}}, {"reentrant", 0, 0, []string{FaultCrash}},
		{"fair", 0, 0, []string{FaultCrash}}, {"multilock", 0, 0, nil}, {"redlock", 0, 0, nil},
		{"semaphore", 0, 0, []string{FaultPubsubLost}}, {"permits", 0, 0, []string{FaultCrash}},
		// A writer and a reader, each twice; then a writer and two readers, who share.
		{"readwrite", 2, 2, []string{FaultCrash}}, {"readwrite", 3, 1, []string{FaultCrash}},
	} {
		cfg := Config{Kind: tc.kind, Clients: max(tc.clients, 2), Rounds: max(tc.rounds, 1), Faults: tc.faults, MaxFaults: 1}
		r := mustSim(t, cfg).Exhaustive(t.Context())
		if r.Violations != 0 || !r.Complete || r.Schedules == 0 {
			t.Errorf("%s %d × %d %v: %d violations (%+v), complete %v, %d schedules", tc.kind, cfg.Clients, cfg.Rounds, tc.faults,
				r.Violations, r.Shortest, r.Complete, r.Schedules)
		}
	}
}

// TestCheckerCatchesHandMadeViolations: the checker is not vacuous. A write over a version the
// writer never read, a repeated fencing token, and a key left behind are each reported.
func TestCheckerCatchesHandMadeViolations(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "fenced", Clients: 2})
	w := s.Start()
	a, b := &w.Clients[0], &w.Clients[1]
	s.enter(w, a, 5)
	s.enter(w, b, 6)
	s.write(w, b)
	s.write(w, a) // refused: token 5 < 6
	if w.Violation != "" || w.Res.Version != 1 {
		t.Fatalf("a stale fenced write was not refused: %q, version %d", w.Violation, w.Res.Version)
	}
	u := mustSim(t, Config{Kind: "lua", Clients: 2})
	w = u.Start()
	a, b = &w.Clients[0], &w.Clients[1]
	u.enter(w, a, 0)
	u.enter(w, b, 0)
	u.write(w, b)
	u.write(w, a)
	if !strings.HasPrefix(w.Violation, "mutual exclusion") {
		t.Errorf("two holders' writes both landed, checker said %q", w.Violation)
	}
	w = s.Start()
	a, b = &w.Clients[0], &w.Clients[1]
	s.enter(w, a, 7)
	s.write(w, a)
	s.enter(w, b, 7)
	s.write(w, b)
	if !strings.HasPrefix(w.Violation, "fencing") {
		t.Errorf("a token written twice, checker said %q", w.Violation)
	}
	w = s.Start()
	s.cmd(w, &w.Clients[0], 0, "SET", "stray", "x")
	for i := range w.Clients {
		w.Clients[i].Done = true
	}
	s.settle(w)
	if !strings.HasPrefix(w.Violation, "leftover") {
		t.Errorf("a key left without TTL, checker said %q", w.Violation)
	}
	// A script that fails is a violation, not a step to shrug off.
	w = s.Start()
	s.script(w, &w.Clients[0], 0, "Broken", "return redis.call('INCR', KEYS[1], 'x')", []string{"k"})
	if !strings.HasPrefix(w.Violation, "script") {
		t.Errorf("a script error, checker said %q", w.Violation)
	}
	// The fair lock served out of queue order with nobody's wait over.
	f := mustSim(t, Config{Kind: "fair", Clients: 2})
	w = f.Start()
	fairKind{}.checkFIFO(w, w.Clients[1].Value, []string{w.Clients[0].Value, w.Clients[1].Value})
	if !strings.HasPrefix(w.Violation, "fifo") {
		t.Errorf("the second in the fair queue served first, checker said %q", w.Violation)
	}
	w = f.Start()
	fairKind{}.checkFIFO(w, w.Clients[0].Value, []string{w.Clients[0].Value, w.Clients[1].Value})
	if w.Violation != "" {
		t.Errorf("the first in the fair queue served first, checker said %q", w.Violation)
	}
}

// TestReplayFileRoundTrips: a written replay file reads back and replays identically, and its
// page names every step.
func TestReplayFileRoundTrips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rep, err := Search{Config: Config{Kind: "setnx-expire", Clients: 2, Faults: []string{FaultCrash}, MaxFaults: 1}, Exhaustive: true, Dir: dir}.Run(t.Context())
	if err != nil || rep.ReplayFile == "" || rep.Shortest == nil {
		t.Fatalf("search: %+v, %v", rep, err)
	}
	f, err := ReadReplayFile(rep.ReplayFile)
	if err != nil {
		t.Fatal(err)
	}
	if f.TraceHash != rep.Shortest.TraceHash || f.Steps != rep.Shortest.Steps || len(f.Trace) != f.Steps {
		t.Errorf("file %s/%d steps/%d trace lines, report %s/%d", f.TraceHash, f.Steps, len(f.Trace), rep.Shortest.TraceHash, rep.Shortest.Steps)
	}
	out, err := f.Replay(3)
	if err != nil || out.Reproduced != 3 || !out.Identical {
		t.Errorf("replay: %+v, %v", out, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.html")); len(m) != 1 {
		t.Errorf("pages: %v", m)
	}
}
