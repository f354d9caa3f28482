package simulate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// TestSharedProcess: two clients in one process and one in another (Config.PerProcess 2), for
// every kind whose clients may share a process: every schedule is searched and none breaks a
// property. A pause breaks the kinds without tokens with one client per process too; crash
// breaks semaphore (its permit never comes back).
func TestSharedProcess(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Kind: "lua", Rounds: 2, Faults: []string{FaultCrash}},
		{Kind: "fenced", Rounds: 1, Faults: []string{FaultCrash, FaultPause}},
		// The release that keeps the process in line for its second waiter, whose nomination is
		// lost (core.Queue.InLine).
		{Kind: "reentrant", Rounds: 2, Faults: []string{FaultCrash, FaultPubsubLost}},
		{Kind: "readwrite", Rounds: 2, Faults: []string{FaultPubsubLost}}, // process 1 writes, 2 reads
		{Kind: "multilock", Rounds: 1},                                    // a queue and a subscription for each part
		{Kind: "redlock", Rounds: 1},
		{Kind: "semaphore", Rounds: 2, Faults: []string{FaultPubsubLost}},
		{Kind: "permits", Rounds: 2, Faults: []string{FaultCrash}},
		// A queue for each waiter, one heartbeat for the process, hand-overs within it.
		{Kind: "fair", Rounds: 2, Faults: []string{FaultCrash}},
	} {
		cfg.Clients, cfg.PerProcess, cfg.MaxFaults = 3, 2, 1
		t.Run(cfg.Kind, func(t *testing.T) {
			t.Parallel()
			r := mustSim(t, cfg).Exhaustive(t.Context())
			if r.Violations != 0 || !r.Complete {
				t.Errorf("%s: %d violations (complete %v), shortest %+v", cfg.Kind, r.Violations, r.Complete, r.Shortest)
			}
			t.Logf("%s %d rounds %v: %d schedules, %d states in %v", cfg.Kind, cfg.Rounds, cfg.Faults, r.Schedules, r.States, r.Elapsed.Round(time.Millisecond))
		})
	}
}

// TestReadersShareInAProcess: two writers in process 1 and two readers in process 2. A reader
// that wins leaves the other reader of its process free to go at once, as the library's read side
// does (core.ReadSide.Shares), so no reader sleeps while the lock would let it in (the wake
// check, which found exactly that sleep before the simulator gave readers the library's hint).
func TestReadersShareInAProcess(t *testing.T) {
	t.Parallel()
	r := mustSim(t, Config{Kind: "readwrite", Clients: 4, PerProcess: 2, Rounds: 1, Faults: []string{FaultCrash}, MaxFaults: 1}).Exhaustive(t.Context())
	if r.Violations != 0 || !r.Complete {
		t.Errorf("%d violations (complete %v), shortest %+v", r.Violations, r.Complete, r.Shortest)
	}
	t.Logf("%d schedules, %d states in %v", r.Schedules, r.States, r.Elapsed.Round(time.Millisecond))
}

// TestSharedProcessHandsOver: with two clients in a process, a release passes the lock to the
// other without a Redis acquire (the release script hands it to the process's next waiter, which
// takes it next without a command), in some schedules; with one client per process, never.
func TestSharedProcessHandsOver(t *testing.T) {
	t.Parallel()
	// The release script and its reply's code for a hand-over within the process.
	for kind, release := range map[string][2]string{"fenced": {"LineRelease", "[3 "}, "fair": {"FairRelease", "[2 "}} {
		for _, per := range []int{1, 2} {
			s := mustSim(t, Config{Kind: kind, Clients: 3, PerProcess: per, Rounds: 2})
			n := 0
			for seed := range uint64(20) {
				if handedInProcess(s.RunSeed(seed), release[0], release[1]) {
					n++
				}
			}
			t.Logf("%s, %d per process: %d of 20 schedules hand the lock over in a process", kind, per, n)
			if (n > 0) != (per > 1) {
				t.Errorf("%s, %d per process: %d of 20 schedules hand the lock over in a process", kind, per, n)
			}
		}
	}
}

// handedInProcess: some release's reply (script, starting code) handed the lock to a waiter of
// its own process, which then took it with no command of its own in between.
func handedInProcess(w *World, script, code string) bool {
	steps := w.Steps()
	for i, st := range steps {
		if !strings.Contains(st.What, script) || !strings.HasPrefix(st.Reply, code) {
			continue
		}
		to := strings.Split(strings.Split(st.Reply, ":")[1], ".")[0] // [3 "p1:c2.r0" ...]: c2
		for _, next := range steps[i+1:] {
			if next.Who == to {
				if next.What == "take the lock handed over" {
					return true
				}
				break
			}
		}
	}
	return false
}

// TestNoCohortNeedsSharedProcess: the mutant no-cohort, found with two clients in a process
// (TestMutantsFound), hides from the same search with one client per process. Not parallel: the
// mutant is switched on for the whole process.
func TestNoCohortNeedsSharedProcess(t *testing.T) {
	undo := core.Mutate(core.NoCohort)
	defer undo()
	r := mustSim(t, Config{Kind: "lua", Clients: 3, Rounds: 6}).Exhaustive(context.Background())
	if r.Violations != 0 || !r.Complete {
		t.Fatalf("%d violations (complete %v), shortest %+v; want none", r.Violations, r.Complete, r.Shortest)
	}
}

// TestSharedProcessClonesApart: a World with processes of two clients copies whole: the steps of
// one copy leave the other's processes (queue, line, subscription) as they were.
func TestSharedProcessClonesApart(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "fenced", Clients: 3, PerProcess: 2, Rounds: 2})
	w := s.Start()
	for n := 0; n < 200 && len(s.Choices(w)) > 0; n++ {
		c := w.clone()
		before := c.hash(0)
		ch := s.Choices(w)
		s.Apply(w, ch[0], 0)
		if c.hash(0) != before {
			t.Fatalf("step %d changed the copy made before it", n)
		}
	}
}
