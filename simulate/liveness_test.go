package simulate

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// apply performs the scheduler's choice ch on w, as a search would.
func apply(s *Sim, w *World, ch Choice) { s.Apply(w, ch, 0) }

// gaveUpAt: client i of a copy of w gives up at instant t (the clock moved there as a search
// moves it); the checker's verdict.
func gaveUpAt(s *Sim, w *World, i int, t int64) string {
	w = w.clone()
	s.advance(w, t)
	s.giveUp(w, &w.Clients[i])
	return w.Violation
}

// TestLivenessGiveUpWhileFree: the liveness check is not vacuous and counts from the right
// instant. A fault happened (so the rule of no fault in the whole run says nothing); once its
// effect is over (the master back, and a ride's longest pause after that, 200 ms, for a waiter
// riding out a refused attempt) and the lock has been free for longer than the line's relook
// bound (250 ms), a give-up is a violation; within the bound, or while the fault is in effect, not.
func TestLivenessGiveUpWhileFree(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "lua", Clients: 2, Faults: []string{FaultMasterDown}})
	w := s.Start()
	apply(s, w, Choice{Op: "fault", Fault: FaultMasterDown, Master: 0}) // down until 2000
	for _, tc := range []struct {
		at   int64
		want string
	}{
		{1900, ""}, // the master still down
		{2200, ""}, // back 200 ms ago: the waiter may still pause in its ride
		{2450, ""}, // calm for 250 ms since: a waiter may not have looked yet
		{2451, "liveness: c2.r0 gave up after waiting 3s while the lock had been free for 251 ms"},
		{2900, "liveness: c2.r0 gave up after waiting 3s while the lock had been free for 700 ms"},
	} {
		if got := gaveUpAt(s, w, 1, tc.at); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("give-up at t=%d: %q, want %q", tc.at, got, tc.want)
		}
	}
	// A wait ends at its deadline (3000): a give-up after it is late, whatever the lock did.
	if got := gaveUpAt(s, w, 1, 3001); !strings.HasPrefix(got, "late: c2.r0 gave up 1 ms after its wait ended") {
		t.Errorf("a give-up after the deadline: %q", got)
	}
	// With no fault at all, any give-up is one, as before.
	if got := gaveUpAt(s, s.Start(), 1, 0); !strings.Contains(got, "no fault in the run") {
		t.Errorf("a give-up in a run with no fault: %q", got)
	}
}

// TestLivenessRedlockMasterBack: a redlock waiter that found no quorum able to free (masters not
// answering) looks again 2 s later, so a master down stays in effect that long after it is back;
// then calm must last the kind's bound, a lease.
func TestLivenessRedlockMasterBack(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "redlock", Clients: 2, Faults: []string{FaultMasterDown}, Wait: 6 * time.Second})
	w := s.Start()
	apply(s, w, Choice{Op: "fault", Fault: FaultMasterDown, Master: 0}) // down until 2000
	for at, want := range map[int64]string{3900: "", 5000: "", 5001: "liveness: c2.r0 gave up after waiting 6s while the lock had been free for 1001 ms"} {
		if got := gaveUpAt(s, w, 1, at); !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("give-up at t=%d: %q, want %q", at, got, want)
		}
	}
}

// TestLivenessCrashedHoldersKeyIsAFaultInEffect: while the key of a holder that crashed is in
// Redis the lock is not free, whatever the clock says; once it expires (at 1000, the lease, in
// the middle of a clock move), the lock counts as free from that instant, not the move's end.
func TestLivenessCrashedHoldersKeyIsAFaultInEffect(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "lua", Clients: 2, Faults: []string{FaultCrash}})
	w := s.Start()
	apply(s, w, Choice{Op: "step", Client: 0}) // c1 takes the lock (lease 1 s)
	apply(s, w, Choice{Op: "step", Client: 1}) // c2 queues
	apply(s, w, Choice{Op: "fault", Fault: FaultCrash, Client: 0})
	if !w.Clients[0].Crashed || w.Calm != -1 {
		t.Fatalf("after the crash: crashed %v, calm since %d", w.Clients[0].Crashed, w.Calm)
	}
	for _, tc := range []struct {
		at   int64
		want string
	}{
		{999, ""},  // the crashed holder's key is still there
		{1250, ""}, // expired at 1000: free for 250 ms
		{1251, "liveness: c2.r0 gave up after waiting 3s while the lock had been free for 251 ms"},
	} {
		if got := gaveUpAt(s, w, 1, tc.at); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("give-up at t=%d: %q, want %q", tc.at, got, tc.want)
		}
	}
}

// TestLivenessFreeness: what counts as free on three masters. Redlock is free while a majority
// has no key (an attempt would win); multilock only when no master holds a part.
func TestLivenessFreeness(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind string
		on   []int // masters holding the lock key
		free bool
	}{
		{"redlock", nil, true}, {"redlock", []int{2}, true}, {"redlock", []int{0, 2}, false},
		{"multilock", nil, true}, {"multilock", []int{1}, false},
		{"lua", nil, true}, {"lua", []int{0}, false},
	} {
		s := mustSim(t, Config{Kind: tc.kind, Clients: 1})
		w := s.Start()
		for _, k := range tc.on {
			s.cmd(w, &w.Clients[0], k, "SET", lockName, "x", "PX", "1000")
		}
		if got := s.freeAt(w, w.Now); got != tc.free {
			t.Errorf("%s with the key on %v: free %v, want %v", tc.kind, tc.on, got, tc.free)
		}
		if tc.on != nil && !s.freeAt(w, w.Now+1000) {
			t.Errorf("%s: not free once the keys expired", tc.kind)
		}
	}
}

// TestFairLostGrant (lock/fair.go's rule F7): every schedule of two fair clients, two rounds each,
// with one pub/sub message lost or delayed. A release that takes the lock for a waiter tells it on
// its own channel; when that message is lost, the waiter's next heartbeat reads the lock's holder
// and rings it, and its attempt takes the lock. Before the heartbeat did, this search found the lock handed to a waiter
// that slept on (2 violations of the wake check, the shortest in 21 steps).
func TestFairLostGrant(t *testing.T) {
	t.Parallel()
	r := mustSim(t, Config{Kind: "fair", Clients: 2, Rounds: 2, Faults: []string{FaultPubsubLost, FaultPubsubDelayed}, MaxFaults: 1}).
		Exhaustive(t.Context())
	if !r.Complete || r.Violations != 0 {
		t.Fatalf("complete %v, %d violations, shortest %+v; want a complete search with none", r.Complete, r.Violations, r.Shortest)
	}
	t.Logf("%d schedules, %d states", r.Schedules, r.States)
}

// TestRideAfterNoAnswer: a waiter whose attempt a master down did not answer leaves its queue and
// tries again after the Locker's pause (core.RidePause), so a master-down search of the kinds on
// core.Hold ends every run (none at the step bound, where a waiter that tried again at once spun)
// with no violation, and some schedule rides.
func TestRideAfterNoAnswer(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"reentrant", "readwrite", "permits"} {
		s := mustSim(t, Config{Kind: kind, Clients: 2, Rounds: 2, Faults: []string{FaultMasterDown}, MaxFaults: 1})
		cleanWithSome(t, s, kind, 200, "rides after a master down", func(st Step) bool { return st.What == "try again" })
	}
}

// TestReplyLostSettles: an attempt whose reply is lost, on the kinds whose hash counts an owner's
// holds, is made again in place, and a win gives back the hold the lost attempt counted: every
// schedule of 2 clients, 2 rounds with one lost reply ends with no violation (the one release
// frees, checkReleased), and some schedule settles a second hold.
func TestReplyLostSettles(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"reentrant", "readwrite", "multilock"} {
		rounds := 2
		if kind == "multilock" {
			rounds = 1 // three masters: 2 rounds take seconds
		}
		s := mustSim(t, Config{Kind: kind, Clients: 2, Rounds: rounds, Faults: []string{FaultReplyLost}, MaxFaults: 1})
		cleanWithSome(t, s, kind, 300, "gives back a second hold after a lost reply", func(st Step) bool {
			return strings.Contains(st.What, "Release") && strings.HasPrefix(st.Reply, "0")
		})
	}
}

// cleanWithSome: s's exhaustive search ends every run (none at the step bound) with no
// violation, and one of its first runs random schedules (seeds 0 on) has a step that does what.
func cleanWithSome(t *testing.T, s *Sim, kind string, runs uint64, what string, does func(Step) bool) {
	t.Helper()
	r := s.Exhaustive(t.Context())
	if !r.Complete || r.Truncated != 0 || r.Violations != 0 {
		t.Errorf("%s: complete %v, %d runs at the step bound, %d violations (%+v)", kind, r.Complete, r.Truncated, r.Violations, r.Shortest)
	}
	for seed := range runs {
		if slices.ContainsFunc(s.RunSeed(seed).Steps(), does) {
			return
		}
	}
	t.Errorf("%s: no schedule of %d %s", kind, runs, what)
}
