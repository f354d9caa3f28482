package lab_test

import (
	"context"
	"testing"

	"seckill/lab"
)

// TestTimelineCountsTheAuditsOverlaps: the timeline's red (lab.TimelineOverlaps, which the
// dashboard mirrors) counts what the audit's overlaps count, buyers inside the read-check-write
// together, not buyers that believed they held the lock (issue 37, item 5: for uuid the table
// said 0 overlaps while the timeline drew 3 buyers "inside together", counted from acquire to
// answer, the release's pause included). Each section is inside the span Redis counted, so the
// timeline's count is at most the audit's; with none's crowd both see overlaps.
func TestTimelineCountsTheAuditsOverlaps(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	for _, name := range []string{"none", "uuid", "reentrant"} {
		sc, err := lab.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		res := r.Run(context.Background(), sc)
		sections, held := 0, 0
		for _, s := range res.Timeline {
			if s.SectionMs >= 0 {
				sections++
				if s.SectionEndMs < s.SectionMs || s.SectionMs < s.StartMs || s.SectionEndMs > s.EndMs {
					t.Errorf("%s: a section outside its sale: %+v", name, s)
				}
			}
			if s.HeldMs >= 0 {
				held++
			}
		}
		k := lab.TimelineOverlaps(res.Timeline)
		// What the timeline counted before: lock holdings (acquire to answer) that cross.
		var holdings []lab.Span
		for _, s := range res.Timeline {
			if s.HeldMs >= 0 {
				holdings = append(holdings, lab.Span{SectionMs: s.HeldMs, SectionEndMs: s.EndMs})
			}
		}
		t.Logf("%s: %s, %d sales on the timeline, %d held the lock, %d in the read-check-write; overlaps: audit %d, timeline %d (holdings crossing: %d)",
			name, res.Verdict, len(res.Timeline), held, sections, res.Overlaps, k, lab.TimelineOverlaps(holdings))
		if sections == 0 {
			t.Errorf("%s: no sale on the timeline has a read-check-write", name)
		}
		if int64(k) > res.Overlaps {
			t.Errorf("%s: the timeline counts %d overlaps, more than the audit's %d", name, k, res.Overlaps)
		}
		switch name {
		case "none":
			if k == 0 || res.Overlaps == 0 {
				t.Errorf("none: overlaps audit %d, timeline %d; want both > 0", res.Overlaps, k)
			}
		case "reentrant":
			if k != 0 || res.Overlaps != 0 {
				t.Errorf("reentrant: overlaps audit %d, timeline %d; want 0", res.Overlaps, k)
			}
		}
	}
}

func TestTimelineOverlapsCountsEntries(t *testing.T) {
	t.Parallel()
	sec := func(a, b float64) lab.Span { return lab.Span{SectionMs: a, SectionEndMs: b} }
	for _, c := range []struct {
		spans []lab.Span
		want  int
	}{
		{[]lab.Span{sec(0, 10), sec(10, 20), sec(20, 30)}, 0}, // one after another
		{[]lab.Span{sec(0, 10), sec(5, 20), sec(15, 30)}, 2},  // each enters while the one before is inside
		{[]lab.Span{sec(0, 30), sec(1, 2), sec(3, 4)}, 2},
		{[]lab.Span{sec(5, 9), sec(5, 9)}, 1}, // at once: one of them entered second
		{[]lab.Span{sec(0, 10), {SectionMs: -1, SectionEndMs: -1}}, 0},
	} {
		if got := lab.TimelineOverlaps(c.spans); got != c.want {
			t.Errorf("%v: %d, want %d", c.spans, got, c.want)
		}
	}
}
