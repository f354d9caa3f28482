package explore

import (
	"context"
	"testing"

	"seckill/internal/modes"
	"seckill/internal/redisproc"
)

// Each fault of the catalogue does what its name says, on a schedule written by hand: with it
// the trial fails (or is held up) the way the fault explains, without it it does not.
func TestFaultsDoWhatTheySay(t *testing.T) {
	t.Parallel()
	rig, err := NewRig(context.Background(), RigOptions{NoSentinel: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rig.Close()
	run := func(t *testing.T, mode string, s Schedule) Outcome {
		t.Helper()
		m, err := modes.LookupMode(mode)
		if err != nil {
			t.Fatal(err)
		}
		s.Instances = max(s.Instances, 1)
		s.WaitMs = 4 * s.LeaseMs
		out, err := rig.Run(context.Background(), m, s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	two := func(lease, work0, start1 int64, faults ...Fault) Schedule {
		return Schedule{LeaseMs: lease, Stock: 1, Buyers: []Buyer{{WorkMs: work0}, {StartMs: start1}}, Faults: faults}
	}

	t.Run("crash after the first reply: setnx-expire's key keeps no TTL", func(t *testing.T) {
		// b1 starts 80 ms in: b0's SETNX must come first (on a loaded machine it took 36 ms, and b1
		// starting at 20 ms took the key first).
		out := run(t, "setnx-expire", two(100, 0, 80, Fault{Kind: Crash, Buyer: 0, Point: AtReply1}))
		if !out.Has(Liveness) || out.Records[0].Kind != "crashed" || out.Records[1].Kind != "timeout" {
			t.Fatalf("want b0 crashed, b1 timed out, a liveness violation; got %+v %v", out.Records, out.Violations)
		}
		if out := run(t, "setnx-expire", two(100, 0, 20, Fault{Kind: Crash, Buyer: 0, Point: AtAfterAcquire})); out.Has(Liveness) {
			t.Fatalf("a crash after EXPIRE leaves a TTL: want no liveness violation, got %v", out.Violations)
		}
	})
	t.Run("clock-fast: a key expires while its holder works within the lease", func(t *testing.T) {
		if out := run(t, "lua", two(200, 150, 20)); len(out.Violations) != 0 {
			t.Fatalf("without the fault: %v", out.Violations)
		}
		// b1 on another instance: a waiter of the same instance waits for its holder's hand-over.
		s := two(200, 150, 20, Fault{Kind: ClockFast, Master: 0, DurMs: 200, Rate: 5})
		s.Instances, s.Buyers[1].Instance = 2, 1
		out := run(t, "lua", s)
		if !out.Has(LostUpdate) {
			t.Fatalf("want a lost update, got %v (records %+v)", out.Violations, out.Records)
		}
	})
	t.Run("master-restart-empty: the lock is gone, a second buyer gets in", func(t *testing.T) {
		// b1 on another instance: a waiter of the same instance queues in-process behind b0. b0
		// works 1.2 s, so the restart (300 ms on a loaded machine) ends well before b0 writes.
		s := two(4000, 1200, 100, Fault{Kind: MasterRestartEmpty, Master: 0, AtMs: 50})
		s.Instances, s.Buyers[1].Instance = 2, 1
		out := run(t, "lua", s)
		if !out.Has(LostUpdate) || len(out.Events) != 1 || out.Events[0].Err != "" {
			t.Fatalf("want a lost update after the restart, got %v, events %+v, records %+v", out.Violations, out.Events, out.Records)
		}
	})
	t.Run("partition: the instance's buyer retries until it heals", func(t *testing.T) {
		s := Schedule{LeaseMs: 100, Stock: 1, Buyers: []Buyer{{StartMs: 20}},
			Faults: []Fault{{Kind: Partition, Instance: 0, Masters: []int{0}, DurMs: 200}}}
		out := run(t, "lua", s)
		if r := out.Records[0]; r.Kind != "sold" || r.AcquiredMs < 150 {
			t.Fatalf("want sold after the partition healed (200 ms), got %+v", r)
		}
	})
	t.Run("slow-reply: every reply comes late", func(t *testing.T) {
		s := Schedule{LeaseMs: 100, Stock: 1, Buyers: []Buyer{{}}, Faults: []Fault{{Kind: SlowReply, Buyer: 0, DurMs: 40}}}
		// Acquire, read, write, release: at least four replies.
		if r := run(t, "lua", s).Records[0]; r.Kind != "sold" || r.EndMs-r.StartMs < 150 {
			t.Fatalf("want a sale of at least 4 x 40 ms, got %+v", r)
		}
	})
	t.Run("master-down: commands wait for the stopped master", func(t *testing.T) {
		if !redisproc.UseReal() {
			t.Skip("an in-process Redis cannot be stopped (SIGSTOP): install redis-server")
		}
		// A lease longer than the stop: the holder counts it from when it sent the SET (at 30 ms),
		// so with 100 ms it would know its lock lost by the time the master answers.
		s := Schedule{LeaseMs: 1000, Stock: 1, Buyers: []Buyer{{StartMs: 30}},
			Faults: []Fault{{Kind: MasterDown, Master: 0, DurMs: 200}}}
		out := run(t, "lua", s)
		if r := out.Records[0]; r.Kind != "sold" || r.AcquiredMs < 150 || len(out.Events) != 1 {
			t.Fatalf("want sold once m0 was continued (200 ms), got %+v, events %+v", r, out.Events)
		}
	})
}
