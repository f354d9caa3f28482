package simulate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// TestMutantsFound: each mutant of the core (lock/core.Mutants) is found by an exhaustive search
// of a small bound within seconds, and the same search of the sound core finds nothing. The
// simulator runs the library's own core, so a decision broken there breaks here: this is the
// measure of the simulator. Not parallel: a mutant is switched on for the whole process.
func TestMutantsFound(t *testing.T) {
	cases := map[core.Mutant]struct {
		cfg  Config
		want string
	}{
		// Work outlasts the lease: only the watchdog keeps the lock.
		core.NoRenewal: {Config{Kind: "fenced", Clients: 1, Work: 1500 * time.Millisecond}, "lost with no fault"},
		// A holder paused past its lease must learn it lost the lock before it writes.
		core.NeverLost: {Config{Kind: "fenced", Clients: 2, Faults: []string{FaultPause}, MaxFaults: 1}, "Lost closes too late"},
		// The second holder's lock comes handed over with 500 ms; its work takes 600.
		core.NoPush: {Config{Kind: "lua", Clients: 2, Work: 600 * time.Millisecond}, "lost with no fault"},
		// The release hands the lock to the waiter and tells it; unless the grant's ring wakes
		// it, it sleeps on its bound while the lock handed to it serves nobody.
		core.NoWake: {Config{Kind: "lua", Clients: 2}, "wake"},
		// The waiter's first attempt ran before its process heard grants, so it did not queue in
		// Redis; only its bounded sleep brings it back to queue, and the release finds nobody
		// in the line to hand the lock to.
		core.NoRelook: {Config{Kind: "lua", Clients: 2}, "wake"},
		// The waiter's first attempt ran before its process heard grants, so it did not queue in
		// Redis; the release finds nobody in the line. Only a look once the subscription is
		// confirmed queues it (or finds the lock free).
		core.NoLookAfterSubscribe: {Config{Kind: "lua", Clients: 2, Work: 50 * time.Millisecond}, "wake"},
		// Two clients of one process take turns, six rounds each, while the third waits in the
		// Redis line: the cohort lets it in after eight holders of the process (2.4 s); without it
		// the process keeps the lock for all twelve (3.6 s), past the third's 3 s wait.
		core.NoCohort: {Config{Kind: "lua", Clients: 3, PerProcess: 2, Rounds: 6}, "with no fault"},
		// A release takes the fair lock for the next waiter and its grant message is lost: only
		// the heartbeat, which reads the holder, rings it; without that it sleeps out its turn
		// while the lock handed to it serves nobody.
		// A waiter behind a holder that crashed, whose lock outlives its wait, must give up at its
		// deadline, not at its next look after it.
		core.NoDeadlineTimer: {Config{Kind: "lua", Clients: 2, Wait: 700 * time.Millisecond, Faults: []string{FaultCrash}, MaxFaults: 1}, "late"},
		// Two waiters of one process: the first takes the lock and its release keeps the process
		// in the reentrant line for the second, asleep on the first's hint; the nomination that
		// should wake it is lost, and only the bound its release set brings it back in time.
		core.NoInLineBound: {Config{Kind: "reentrant", Clients: 3, PerProcess: 2, Rounds: 2, Faults: []string{FaultPubsubLost}, MaxFaults: 1}, "wake"},
		core.NoBeatRing:    {Config{Kind: "fair", Clients: 2, Rounds: 2, Faults: []string{FaultPubsubLost}, MaxFaults: 1}, "wake"},
		// The first attempt takes the lock and its reply is lost; the attempt made again re-enters
		// it (two holds counted). Unless the win gives one back, the one release leaves the lock
		// held by nobody until its lease ends.
		core.NoSettle: {Config{Kind: "reentrant", Clients: 1, Faults: []string{FaultReplyLost}, MaxFaults: 1}, "held after release"},
		// A waiter's attempt queues it in the Redis line, and its reply is lost; its next attempt is
		// refused by a master down, and it rides with a new value. Unless it takes the old value
		// out of the line, the new one waits behind it with the lock free.
		core.NoLeaveUnanswered: {Config{Kind: "lua", Clients: 2, Faults: []string{FaultReplyLost, FaultMasterDown}, MaxFaults: 2}, "wake"},
		// Two fair waiters ride a master down; one's leave, sent again in the background, lands
		// after its next attempt took its place again and takes it out: the release finds nobody
		// to hand the lock to while that waiter sleeps.
		core.NoKeepPlace: {Config{Kind: "fair", Clients: 2, Rounds: 2, Faults: []string{FaultMasterDown}, MaxFaults: 1}, "wake"},
		// Two Redlock holders in turn: the second reads the counter the first raised to its token,
		// and unless it steps past it, both write with one token.
		core.NoTokenStep: {Config{Kind: "redlock-fenced", Clients: 2}, "fencing"},
	}
	if len(cases) != len(core.Mutants) {
		t.Fatalf("%d mutants tested, the core has %d", len(cases), len(core.Mutants))
	}
	// Bounds whose sound search another test already makes, complete with no violation.
	provenBy := map[core.Mutant]string{core.NoTokenStep: "TestLabModesNoneAtomicRedlockFenced"}
	for _, m := range core.Mutants {
		tc := cases[m]
		t.Run(m.String(), func(t *testing.T) {
			if provenBy[m] != "" {
				t.Logf("the sound search of this bound: %s", provenBy[m])
			} else if r := mustSim(t, tc.cfg).Exhaustive(context.Background()); r.Violations != 0 || !r.Complete {
				t.Fatalf("the sound core: %d violations (complete %v), shortest %+v; want a complete search with none", r.Violations, r.Complete, r.Shortest)
			}
			undo := core.Mutate(m)
			defer undo()
			start := time.Now()
			r := mustSim(t, tc.cfg).Exhaustive(context.Background())
			if r.Shortest == nil || !strings.Contains(r.Shortest.Violation, tc.want) {
				t.Fatalf("mutant %s: %d violations, shortest %+v; want one saying %q", m, r.Violations, r.Shortest, tc.want)
			}
			// Its counterexample replays, whatever lines its steps wrote (a message unheard, a
			// settle's commands: one step, several lines). A replay file keeps the command's bounds,
			// which set no work or wait of their own.
			replayable := tc.cfg.Work == 0 && tc.cfg.Wait == 0
			if out, err := NewReplayFile(tc.cfg, r.Shortest).Replay(1); replayable && (err != nil || out.Reproduced != 1 || !out.Identical) {
				t.Fatalf("mutant %s: the counterexample does not replay: %+v, %v", m, out, err)
			}
			t.Logf("mutant %s found in %v (%d schedules): %s", m, time.Since(start).Round(time.Millisecond), r.Schedules, r.Shortest.Violation)
		})
	}
}

// TestScriptMutantsFound: the same measure for the library's scripts, which the simulator runs as
// they are: each mutant is one edit of one script, found by an exhaustive search of a small bound
// whose search with the sound script is complete with no violation (TestMutantsFound runs those
// bounds' sound searches where they are the same; these run their own).
func TestScriptMutantsFound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script, src, from, to string
		cfg                         Config
		want                        string
	}{
		// A release without the owner check: a holder paused past its lease (1.5 s of 1 s), back,
		// finds its lease lost and skips its write, but its release deletes the lock of the next
		// holder, still at its work (1 s), whose lease says held.
		{"no-owner-check", "LineRelease", script.LineRelease, "if redis.call('get', lock_key) ~= value then", "if false then",
			Config{Kind: "fenced", Clients: 2, Faults: []string{FaultPause}, MaxFaults: 1, Pause: 1500 * time.Millisecond, Work: time.Second}, "lease"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if r := mustSim(t, tc.cfg).Exhaustive(context.Background()); r.Violations != 0 || !r.Complete {
				t.Fatalf("the sound script: %d violations (complete %v), shortest %+v", r.Violations, r.Complete, r.Shortest)
			}
			if !strings.Contains(tc.src, tc.from) {
				t.Fatalf("%s no longer has %q: the mutant needs a new edit", tc.script, tc.from)
			}
			s := mustSim(t, tc.cfg)
			s.swaps = map[string]string{tc.script: strings.Replace(tc.src, tc.from, tc.to, 1)}
			start := time.Now()
			r := s.Exhaustive(context.Background())
			if r.Shortest == nil || !strings.Contains(r.Shortest.Violation, tc.want) {
				t.Fatalf("mutant %s: %d violations, shortest %+v; want one saying %q", tc.name, r.Violations, r.Shortest, tc.want)
			}
			t.Logf("mutant %s found in %v (%d schedules): %s", tc.name, time.Since(start).Round(time.Millisecond), r.Schedules, r.Shortest.Violation)
		})
	}
}
