package explore

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"seckill/internal/history"
)

// Violation kinds, most telling first: a trial's kind is the first of these it shows.
const (
	// StaleWrite: a write was accepted from a holder whose fencing token was older than that of
	// a holder whose token had already reached the store (its read had come back) before the
	// write was sent. A newer holder that died before touching the store leaves the store
	// nothing to fence with: the older holder's write is then not stale (Kleppmann's fencing is
	// relative to the resource), and any damage it does shows as a lost update instead.
	StaleWrite = "stale-write"
	// LostUpdate: fewer units left the stock than buyers were told "sold".
	LostUpdate = "lost-update"
	// Oversell: more buyers were told "sold" than there was stock.
	Oversell = "oversell"
	// Overlap: two buyers whose writes were accepted were inside the lock at the same time (from
	// acquiring to their write's answer).
	Overlap = "overlap"
	// NotLinearizable: porcupine finds no order of the sales that a stock counter explains.
	NotLinearizable = "not-linearizable"
	// Liveness: a buyer gave up after its whole wait although, for more than half of it, nobody
	// held the lock and every server was up.
	Liveness = "liveness"
)

// Kinds lists the violation kinds in the order the checker ranks them.
var Kinds = []string{StaleWrite, LostUpdate, Oversell, Overlap, NotLinearizable, Liveness}

// Violation is one broken property of one trial.
type Violation struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Check judges a trial from what its buyers recorded and the stock read back at its end.
func Check(o Outcome) []Violation {
	var out []Violation
	add := func(kind, format string, args ...any) {
		out = append(out, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	s, recs := o.Schedule, o.Records
	sold, unknown := 0, 0
	for _, r := range recs {
		switch r.Kind {
		case "sold":
			sold++
		case "soldout", "timeout", "stale", "lost":
		default:
			unknown++ // crashed, unavailable, error: the write may or may not have happened
		}
	}
	taken := s.Stock - o.Final
	if int64(sold) > s.Stock {
		add(Oversell, "%d buyers told sold, stock %d", sold, s.Stock)
	}
	if taken < int64(sold) {
		add(LostUpdate, "%d buyers told sold, the stock went down by %d (%d -> %d)", sold, taken, s.Stock, o.Final)
	}
	// Accepted writes: told sold, or dead after a write whose answer was accepted.
	var writes []Record
	for _, r := range recs {
		// Only a lock has a section: the atomic mode's writes are single scripts.
		if r.Wrote && r.AcquiredMs > 0 {
			writes = append(writes, r)
		}
	}
	for i, a := range writes {
		for _, b := range writes[i+1:] {
			if a.AcquiredMs < b.CommitEndMs && b.AcquiredMs < a.CommitEndMs {
				add(Overlap, "b%d inside %.0f..%.0fms and b%d inside %.0f..%.0fms, both writes accepted",
					a.Buyer, a.AcquiredMs, a.CommitEndMs, b.Buyer, b.AcquiredMs, b.CommitEndMs)
			}
		}
	}
	for _, w := range writes {
		if w.Token <= 0 {
			continue
		}
		for _, r := range recs {
			if r.Token > w.Token && r.ReadMs > 0 && r.ReadMs < w.CommitStartMs {
				add(StaleWrite, "b%d's write with token %d accepted at %.0fms; b%d had shown token %d to the store at %.0fms",
					w.Buyer, w.Token, w.CommitStartMs, r.Buyer, r.Token, r.ReadMs)
				break
			}
		}
	}
	if v := historyOf(o); v != "" {
		add(NotLinearizable, "%s", v)
	}
	out = append(out, liveness(o)...)
	sort.SliceStable(out, func(i, j int) bool {
		return slices.Index(Kinds, out[i].Kind) < slices.Index(Kinds, out[j].Kind)
	})
	return out
}

// historyOf is porcupine's verdict on the buyers' answers ("" when linearizable).
func historyOf(o Outcome) string {
	outs := sales(o)
	if len(outs) == 0 {
		return ""
	}
	v := history.Verdict(o.Schedule.Stock, time.Time{}, outs)
	if v == history.Linearizable {
		return ""
	}
	return fmt.Sprintf("the %d answers, from stock %d: %s (porcupine)", len(outs), o.Schedule.Stock, v)
}

// sales turns the records into the history checker's sales, times from the zero time.
func sales(o Outcome) []history.Sale {
	var outs []history.Sale
	at := func(ms float64) time.Time { return time.Time{}.Add(time.Duration(ms * float64(time.Millisecond))) }
	for _, r := range o.Records {
		if r.EndMs == 0 && r.StartMs == 0 {
			continue
		}
		who := fmt.Sprintf("b%d@i%d", r.Buyer, r.Instance)
		if r.Buyer < len(o.Schedule.Buyers) && o.Schedule.Buyers[r.Buyer].ExplicitLease {
			who += " (explicit lease)"
		}
		outs = append(outs, history.Sale{Instance: who, Kind: r.Kind,
			Remaining: r.Remaining, Start: at(r.StartMs), End: at(r.EndMs)})
	}
	return outs
}

type span struct{ from, to float64 }

// liveness flags a buyer that timed out although, for more than half its wait, nobody held the
// lock: no live holder (from acquiring to the end of its sale), no dead holder whose lease could
// still run (up to a lease after it died, or after it started acquiring when it died in the
// acquisition), and no server fault under way (up to a lease after it ended). Buyers whose own
// replies were slowed are not judged.
func liveness(o Outcome) []Violation {
	s := o.Schedule
	L := float64(s.LeaseMs)
	bound := float64(s.WaitMs) / 2
	var busy []span
	for _, r := range o.Records {
		switch {
		case r.Kind == "crashed" && r.AcquiredMs > 0:
			busy = append(busy, span{r.AcquiredMs, r.CrashMs + L})
		case r.Kind == "crashed":
			busy = append(busy, span{r.StartMs, r.CrashMs + L})
		case r.AcquiredMs > 0:
			busy = append(busy, span{r.AcquiredMs, r.EndMs})
		}
	}
	for _, e := range o.Events {
		busy = append(busy, span{e.StartMs, e.EndMs + L})
	}
	for _, f := range s.Faults {
		if f.Kind == Partition {
			busy = append(busy, span{float64(f.AtMs), float64(f.AtMs+f.DurMs) + L})
		}
	}
	var out []Violation
	for _, r := range o.Records {
		if r.Kind != "timeout" || r.SlowReplies {
			continue
		}
		if gap := longestGap(r.StartMs, r.EndMs, busy); gap > bound {
			out = append(out, Violation{Kind: Liveness, Detail: fmt.Sprintf(
				"b%d waited %.0f..%.0fms and gave up; for %.0fms of it nobody held the lock and every server was up",
				r.Buyer, r.StartMs, r.EndMs, gap)})
		}
	}
	return out
}

// longestGap is the longest stretch of from..to that no span covers.
func longestGap(from, to float64, busy []span) float64 {
	var in []span
	for _, b := range busy {
		if b.to > from && b.from < to {
			in = append(in, span{max(b.from, from), min(b.to, to)})
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].from < in[j].from })
	gap, at := 0.0, from
	for _, b := range in {
		gap = max(gap, b.from-at)
		at = max(at, b.to)
	}
	return max(gap, to-at)
}

// Kind is the trial's violation kind: the first of Kinds it shows ("" when none).
func (o Outcome) Kind() string {
	if len(o.Violations) == 0 {
		return ""
	}
	return o.Violations[0].Kind
}

// Has reports whether the trial shows a violation of kind.
func (o Outcome) Has(kind string) bool {
	return slices.ContainsFunc(o.Violations, func(v Violation) bool { return v.Kind == kind })
}
