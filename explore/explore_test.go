package explore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill/internal/modes"
	"seckill/internal/stall"
)

func TestSameSeedDrawsTheSameSchedule(t *testing.T) {
	t.Parallel()
	const lease = 100 * time.Millisecond
	differs := 0
	for trial := range 50 {
		a, b := Draw(42, trial, Catalogue, lease), Draw(42, trial, Catalogue, lease)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("trial %d: seed 42 drew two schedules:\n%+v\n%+v", trial, a, b)
		}
		if !reflect.DeepEqual(a, Draw(43, trial, Catalogue, lease)) {
			differs++
		}
	}
	if differs < 40 {
		t.Fatalf("seeds 42 and 43 drew the same schedule in %d of 50 trials", 50-differs)
	}
}

func TestDrawStaysInItsBounds(t *testing.T) {
	t.Parallel()
	const lease = 100 * time.Millisecond
	kinds := map[string]int{}
	for trial := range 500 {
		s := Draw(7, trial, []string{Pause, Partition}, lease)
		if n := len(s.Buyers); n < 2 || n > 6 {
			t.Fatalf("trial %d: %d buyers, want 2..6", trial, n)
		}
		if s.Instances < 1 || s.Instances > 3 || s.Stock < 1 || s.Stock >= int64(len(s.Buyers)) {
			t.Fatalf("trial %d: %d instances, stock %d for %d buyers", trial, s.Instances, s.Stock, len(s.Buyers))
		}
		for _, b := range s.Buyers {
			if b.Instance >= s.Instances || b.WorkMs > 2*s.LeaseMs || b.StartMs > s.LeaseMs {
				t.Fatalf("trial %d: buyer %+v out of bounds (lease %dms, %d instances)", trial, b, s.LeaseMs, s.Instances)
			}
		}
		if len(s.Faults) > 3 {
			t.Fatalf("trial %d: %d faults, want at most 3", trial, len(s.Faults))
		}
		for _, f := range s.Faults {
			kinds[f.Kind]++
			if f.Kind == Pause && (f.Buyer >= len(s.Buyers) || f.DurMs > 3*s.LeaseMs) {
				t.Fatalf("trial %d: %s out of bounds", trial, f)
			}
			if f.Kind == Partition && (f.Instance >= s.Instances || len(f.Masters) == 0) {
				t.Fatalf("trial %d: %s out of bounds", trial, f)
			}
		}
	}
	if len(kinds) != 2 || kinds[Pause] == 0 || kinds[Partition] == 0 {
		t.Fatalf("drew %v from {pause, partition}", kinds)
	}
	if s := Draw(7, 1, nil, lease); len(s.Faults) != 0 {
		t.Fatalf("an empty catalogue drew %v", s.FaultStrings())
	}
}

func TestParseFaults(t *testing.T) {
	t.Parallel()
	if got, err := ParseFaults("pause, crash,pause"); err != nil || !slices.Equal(got, []string{Pause, Crash}) {
		t.Fatalf("ParseFaults: %v %v", got, err)
	}
	if got, _ := ParseFaults("all"); !slices.Equal(got, Catalogue) {
		t.Fatalf("all: %v", got)
	}
	if got, err := ParseFaults("none"); err != nil || len(got) != 0 {
		t.Fatalf("none: %v %v", got, err)
	}
	if _, err := ParseFaults("pause,meteor"); err == nil {
		t.Fatal("an unknown fault must be refused")
	}
}

func TestWithoutBuyerRenumbersItsFaults(t *testing.T) {
	t.Parallel()
	s := Schedule{Stock: 3, Buyers: make([]Buyer, 4), Faults: []Fault{
		{Kind: Pause, Buyer: 1}, {Kind: Crash, Buyer: 3}, {Kind: MasterDown, Master: 2}}}
	got := s.withoutBuyer(1)
	want := []Fault{{Kind: Crash, Buyer: 2}, {Kind: MasterDown, Master: 2}}
	if len(got.Buyers) != 3 || !reflect.DeepEqual(got.Faults, want) || got.Stock != 3 {
		t.Fatalf("without buyer 1: %d buyers, stock %d, faults %+v", len(got.Buyers), got.Stock, got.Faults)
	}
}

// outcome builds a trial's outcome from records for the checker.
func outcome(stock, final int64, recs ...Record) Outcome {
	return Outcome{Schedule: Schedule{LeaseMs: 100, WaitMs: 400, Stock: stock, Buyers: make([]Buyer, len(recs))},
		Records: recs, Final: final}
}

func kinds(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		o    Outcome
		want []string
	}{
		{"one after the other", outcome(2, 0,
			Record{Buyer: 0, Kind: "sold", Wrote: true, Remaining: 1, StartMs: 1, AcquiredMs: 2, CommitEndMs: 10, EndMs: 11},
			Record{Buyer: 1, Kind: "sold", Wrote: true, Remaining: 0, StartMs: 1, AcquiredMs: 12, CommitEndMs: 20, EndMs: 21}), nil},
		{"two inside at once, both told the same stock", outcome(2, 1,
			Record{Buyer: 0, Kind: "sold", Wrote: true, Remaining: 1, StartMs: 1, AcquiredMs: 2, CommitEndMs: 10, EndMs: 11},
			Record{Buyer: 1, Kind: "sold", Wrote: true, Remaining: 1, StartMs: 1, AcquiredMs: 5, CommitEndMs: 12, EndMs: 13}),
			[]string{LostUpdate, Overlap, NotLinearizable}},
		{"an older token written after a newer one reached the store", outcome(2, 0,
			Record{Buyer: 0, Kind: "sold", Wrote: true, Remaining: 1, Token: 1, StartMs: 1, AcquiredMs: 2, ReadMs: 3, CommitStartMs: 150, CommitEndMs: 151, EndMs: 152},
			Record{Buyer: 1, Kind: "sold", Wrote: true, Remaining: 0, Token: 2, StartMs: 1, AcquiredMs: 120, ReadMs: 121, CommitStartMs: 160, CommitEndMs: 161, EndMs: 162}),
			[]string{StaleWrite, Overlap}},
		{"an older token written after a newer holder died before touching the store", outcome(2, 1,
			Record{Buyer: 0, Kind: "sold", Wrote: true, Remaining: 1, Token: 1, StartMs: 1, AcquiredMs: 2, ReadMs: 3, CommitStartMs: 150, CommitEndMs: 151, EndMs: 152},
			Record{Buyer: 1, Kind: "crashed", Token: 2, StartMs: 1, AcquiredMs: 120, CrashMs: 121, EndMs: 121}),
			nil},
		{"the stale write rejected", outcome(2, 1,
			Record{Buyer: 0, Kind: "stale", Token: 1, StartMs: 1, AcquiredMs: 2, CommitStartMs: 170, CommitEndMs: 171, EndMs: 172},
			Record{Buyer: 1, Kind: "sold", Wrote: true, Remaining: 1, Token: 2, StartMs: 1, AcquiredMs: 120, CommitStartMs: 160, CommitEndMs: 161, EndMs: 162}),
			nil},
		{"a dead holder's lock that never expires", outcome(2, 2,
			Record{Buyer: 0, Kind: "crashed", StartMs: 0, AcquiredMs: 1, CrashMs: 2, EndMs: 2},
			Record{Buyer: 1, Kind: "timeout", StartMs: 5, EndMs: 405}),
			[]string{Liveness}},
		{"a dead holder's lease runs out, the waiter gets in", outcome(2, 1,
			Record{Buyer: 0, Kind: "crashed", StartMs: 0, AcquiredMs: 1, CrashMs: 2, EndMs: 2},
			Record{Buyer: 1, Kind: "sold", Wrote: true, Remaining: 1, StartMs: 5, AcquiredMs: 103, CommitEndMs: 110, EndMs: 111}),
			nil},
		{"a timeout while the holder is paused inside", outcome(2, 1,
			Record{Buyer: 0, Kind: "sold", Wrote: true, Remaining: 1, StartMs: 0, AcquiredMs: 1, CommitEndMs: 500, EndMs: 501},
			Record{Buyer: 1, Kind: "timeout", StartMs: 5, EndMs: 405}),
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := kinds(Check(c.o)); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v: %+v", got, c.want, Check(c.o))
			}
		})
	}
}

// exploreFor explores modes for a short budget on rig with the cheap client-side faults.
func exploreFor(t *testing.T, rig *Rig, modes []string, budget time.Duration) map[string]ModeResult {
	t.Helper()
	rep, err := Explore(context.Background(), rig, Options{Modes: modes, Budget: budget, ShrinkBudget: 4 * time.Second,
		Seed: 1, Faults: []string{Crash, Pause}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ModeResult{}
	for _, m := range rep.Modes {
		out[m.Mode] = m
	}
	return out
}

// The cheapest modes' pattern in a few seconds each: no lock and the SET NX PX lock fail (the
// first at once, the second as soon as a section outlives the lease), the atomic decrement never
// does. Each failure comes with a shrunk, replayable counterexample.
func TestExploreFindsTheCheapestModesPattern(t *testing.T) {
	t.Parallel()
	// Each mode on a rig of its own, all at once: the trials mostly wait on their sections.
	for _, name := range []string{"none", "setnx-ex", "atomic"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rig, err := NewRig(context.Background(), RigOptions{NoSentinel: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rig.Close()
			t.Logf("backend %s", rig.Backend)
			m := exploreFor(t, rig, []string{name}, 3*time.Second)[name]
			if name == "atomic" {
				if m.Violations != 0 || m.Trials < 5 {
					t.Fatalf("atomic: %d violations in %d trials (%v), want none in at least 5", m.Violations, m.Trials, m.ByKind)
				}
				t.Logf("atomic: %d trials (median %.0fms), no violation", m.Trials, m.MedianMs)
				return
			}
			if m.Violations == 0 || m.Shortest == nil {
				t.Fatalf("%s: no violation in %d trials: %+v", name, m.Trials, m)
			}
			if m.Shortest.Buyers > 3 || len(m.Shortest.Faults) > 2 {
				t.Errorf("%s: shrunk to %d buyers and faults %v, want <= 3 and <= 2", name, m.Shortest.Buyers, m.Shortest.Faults)
			}
			r, err := ReadReplay(m.ReplayFile)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(m.Timeline); err != nil || filepath.Ext(m.Timeline) != ".html" {
				t.Errorf("%s: timeline %q: %v", name, m.Timeline, err)
			}
			page, err := os.ReadFile(m.Timeline)
			if err != nil || !strings.Contains(string(page), "<title>seckill explore: the timeline of "+name) {
				t.Errorf("%s: the timeline page has no title naming the mode (%v)", name, err)
			}
			got, err := RunReplay(context.Background(), rig, r, 3)
			if err != nil {
				t.Fatal(err)
			}
			if got.Reproduced == 0 {
				t.Errorf("%s: the replay of %s reproduced in 0 of %d runs: %v", name, r.Kind, got.Of, got.Kinds)
			}
			t.Logf("%s: %d trials, %d violations, %d starved, shortest %+v, replay %d/%d (%d starved)", name, m.Trials,
				m.Violations, m.Starved, *m.Shortest, got.Reproduced, got.Of, got.Starved)
		})
	}
}

func TestRunRefusesAFaultTheRigCannotDraw(t *testing.T) {
	t.Parallel()
	rig := &Rig{Drawable: []string{Pause}, Backend: "test"}
	m, err := modes.LookupMode("lua")
	if err != nil {
		t.Fatal(err)
	}
	s := Schedule{Instances: 1, Buyers: []Buyer{{}}, Faults: []Fault{{Kind: Failover}}}
	if _, err := rig.Run(context.Background(), m, s); err == nil {
		t.Fatal("a failover on a rig without Sentinel must be refused")
	}
	if got := rig.Undrawable([]string{Pause, Failover}); len(got) != 1 || got[Failover] == "" {
		t.Fatalf("Undrawable: %v", got)
	}
}

// TestStarvedTrialsAreSetAside injects a stall far longer than the lease into the starvation
// meter: every trial records it; a safe lock's violation under it is set aside (STARVED), an
// unsafe lock's or the atomic decrement's is not; the table says how many and how long.
func TestStarvedTrialsAreSetAside(t *testing.T) {
	t.Parallel()
	rig, err := NewRig(context.Background(), RigOptions{NoSentinel: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rig.Close()
	rig.injectStall = 20 * DefaultLease
	none, err := modes.LookupMode("none")
	if err != nil {
		t.Fatal(err)
	}
	s := Draw(1, 0, []string{}, DefaultLease)
	out, err := rig.Run(context.Background(), none, s)
	if err != nil {
		t.Fatal(err)
	}
	if out.Stall() < rig.injectStall || !out.Starved() {
		t.Fatalf("a trial under an injected %s stall recorded %s (starved %v)", rig.injectStall, out.Stall(), out.Starved())
	}
	out.Violations = []Violation{{Kind: LostUpdate}}
	for _, c := range []struct {
		mode  string
		aside bool
	}{{"reentrant", true}, {"redlock", true}, {"none", false}, {"lua", false}, {"atomic", false}} {
		m, err := modes.LookupMode(c.mode)
		if err != nil {
			t.Fatal(err)
		}
		if got := setAside(m, out); got != c.aside {
			t.Errorf("%s: a violation under a %s stall set aside %v, want %v", c.mode, out.Stall(), got, c.aside)
		}
	}
	out.StallMs = float64(stall.Threshold(DefaultLease).Milliseconds()) - 1
	if m, _ := modes.LookupMode("reentrant"); setAside(m, out) {
		t.Errorf("a stall of %s, under 2/3 of the lease, set a violation aside", out.Stall())
	}

	rep := Report{LeaseMs: DefaultLease.Milliseconds(), Modes: []ModeResult{{Mode: "reentrant", Trials: 9, Starved: 3,
		LongestStallMs: 1400}}}
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(text,
		"reentrant: 3 violating trials STARVED, set aside (not counted, not shrunk): the machine stalled 1.4s, over 2/3 of the 100ms lease") {
		t.Errorf("the table does not say the trials were starved:\n%s", b.String())
	}
}
