package explore

import (
	"context"
	"fmt"
	"time"

	"seckill/internal/modes"
)

// A smaller schedule replaces the current one when it fails with the same kind in at least
// needRuns of triesRuns runs: timing faults do not fail every time, and the shrinker must not
// trade a reliable counterexample for one that fails only now and then.
const (
	triesRuns = 3
	needRuns  = 2
)

// finalRuns is how often the shrunk schedule is run once more, to say how reliably it fails;
// one that fails in fewer than finalNeed of them passed its steps by luck, and the shrinker
// goes back to the schedule before it (a race that a shortened section makes rare, say).
const (
	finalRuns = 5
	finalNeed = 3
)

// Shrunk is a shrunk counterexample: its kind, the last failing run of its schedule, and how
// many of the final confirming runs failed that way.
type Shrunk struct {
	Kind      string
	Outcome   Outcome
	Confirmed string
}

// Shrink looks for the smallest schedule that still fails like found: it tries, in turn, a
// buyer struck by a fault starting first, without each fault, without each buyer, with every
// pause, outage and partition halved, all buyers on one instance, and every section short,
// keeping a candidate when it fails with the same kind in needRuns of triesRuns runs, until no
// candidate is kept or budget runs out; it returns the smallest kept schedule that then fails in
// finalNeed of finalRuns re-runs (the found one when none does).
func Shrink(ctx context.Context, rig *Rig, mode modes.Mode, found Outcome, budget time.Duration) (Shrunk, error) {
	deadline := time.Now().Add(budget)
	kind := found.Kind()
	cur := found
	kept := []Outcome{found} // every schedule the shrinker kept, the found one first
	// confirm runs s until it has failed needRuns times (true, with the last failing outcome) or
	// can no longer (false).
	confirm := func(s Schedule) (Outcome, bool, error) {
		var last Outcome
		failed := 0
		for run := range triesRuns {
			out, err := rig.Run(ctx, mode, s)
			if err != nil {
				return out, false, err
			}
			if out.Has(kind) {
				failed++
				last = out
			}
			if failed == needRuns {
				return last, true, nil
			}
			if failed+triesRuns-run-1 < needRuns {
				break
			}
		}
		return last, false, nil
	}
	for improved := true; improved && time.Now().Before(deadline); {
		improved = false
		for _, cand := range candidates(cur.Schedule) {
			if time.Now().After(deadline) {
				break
			}
			if err := ctx.Err(); err != nil {
				return Shrunk{}, err
			}
			out, ok, err := confirm(cand)
			if err != nil {
				return Shrunk{}, fmt.Errorf("explore: shrink %s: %w", mode.Name, err)
			}
			if ok {
				cur, improved = out, true
				kept = append(kept, cur)
				break // start again from the smaller schedule
			}
		}
	}
	// The smallest schedule that fails reliably, going back from the smallest kept; the found
	// one is the last resort, however often it fails.
	for i := len(kept) - 1; ; i-- {
		failed := 0
		last := kept[i]
		for range finalRuns {
			out, err := rig.Run(ctx, mode, kept[i].Schedule)
			if err != nil {
				return Shrunk{}, fmt.Errorf("explore: confirm %s: %w", mode.Name, err)
			}
			if out.Has(kind) {
				failed++
				last = out
			}
		}
		if failed >= finalNeed || i == 0 {
			return Shrunk{Kind: kind, Outcome: last, Confirmed: fmt.Sprintf("%d/%d", failed, finalRuns)}, nil
		}
	}
}

// candidates are the schedules one step smaller than s, the most shrinking first.
func candidates(s Schedule) []Schedule {
	var out []Schedule
	// A buyer struck by a fault starting before everyone else: the race it lost is then run the
	// same way every time, and the other buyers can go.
	for _, f := range s.Faults {
		if j := f.Buyer; f.holder() && j < len(s.Buyers) && s.Buyers[j].StartMs > 0 {
			c := s
			c.Buyers = append([]Buyer(nil), s.Buyers...)
			c.Buyers[j].StartMs = 0
			for k := range c.Buyers {
				if k != j && c.Buyers[k].StartMs < 5 {
					c.Buyers[k].StartMs = 5
				}
			}
			out = append(out, c)
		}
		if f.holder() {
			break // the first struck buyer only, so that two of them never take turns
		}
	}
	for i := len(s.Faults) - 1; i >= 0; i-- {
		out = append(out, s.withoutFault(i))
	}
	if len(s.Buyers) > 1 {
		for j := len(s.Buyers) - 1; j >= 0; j-- {
			out = append(out, s.withoutBuyer(j))
		}
	}
	// Shorter pauses, outages and partitions, one at a time (not below a tenth of the lease).
	for i, f := range s.Faults {
		if f.DurMs > s.LeaseMs/10 && f.Kind != SlowReply {
			c := s
			c.Faults = append([]Fault(nil), s.Faults...)
			c.Faults[i].DurMs = f.DurMs / 2
			out = append(out, c)
		}
	}
	// All buyers on one instance; then every section short.
	if s.Instances > 1 {
		c := s
		c.Instances = 1
		c.Buyers = append([]Buyer(nil), s.Buyers...)
		for j := range c.Buyers {
			c.Buyers[j].Instance = 0
		}
		c.Faults = append([]Fault(nil), s.Faults...)
		for i := range c.Faults {
			c.Faults[i].Instance = 0
		}
		out = append(out, c)
	}
	for j, b := range s.Buyers {
		if b.WorkMs > s.LeaseMs/5 {
			c := s
			c.Buyers = append([]Buyer(nil), s.Buyers...)
			c.Buyers[j].WorkMs = s.LeaseMs / 5
			out = append(out, c)
		}
	}
	return out
}
