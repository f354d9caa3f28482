package explore

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// wideReport is a report at its widest: every mode of the story, every kind and fault counted,
// a shortest counterexample with three long faults, faults that cannot be drawn.
func wideReport() Report {
	rep := Report{Seed: 2026, LeaseMs: 100, Budget: "1m0s", Backend: "redis-server (m0 under Sentinel)", Faults: Catalogue,
		Undrawable: map[string]string{Failover: "needs redis-sentinel (apt-get install redis-sentinel) and a replica"}}
	for i, mode := range append(DefaultModes, "redlock-fenced") {
		m := ModeResult{Mode: mode, Trials: 1000 + i, MedianMs: 1234, Violations: 999,
			ByKind: map[string]int{}, FaultsDrawn: map[string]int{}, ViolationsWith: map[string]int{"none": 120}}
		for _, k := range Kinds {
			m.ByKind[k] = 100 + i
		}
		for _, f := range Catalogue {
			m.FaultsDrawn[f], m.ViolationsWith[f] = 40+i, 30+i
		}
		if i%2 == 0 {
			m.Shortest = &Shortest{Kind: NotLinearizable, Buyers: 6, Confirmed: "5/5",
				Faults: []string{"partition i2 from m0,m1,m2 @120ms for 280ms", "clock-fast m1 x4.5 @10ms for 250ms",
					"pause b3 before-commit 116ms"},
				Detail: "buyers b0 and b3 were both told sold, 4 left: no order of the answers explains them; the stock " +
					"went from 5 to 4 while two units were sold"}
			m.ReplayFile, m.Timeline = "/tmp/seckill-explore/"+mode+".json", "/tmp/seckill-explore/"+mode+".html"
		}
		if i == 1 {
			m.Starved, m.LongestStallMs = 3, 1400
		}
		if i == 3 {
			m.Errors, m.LastError = 2, "dial tcp 127.0.0.1:6390: connect: connection refused, while the master was restarted"
		}
		rep.Modes = append(rep.Modes, m)
	}
	return rep
}

// TestTableFits120Columns: the default table of `seckill explore` fits 120 columns even at its
// widest (it was 293-299 columns wide), wrapping long cells in their column, and keeps what
// matters: each mode's figures, its shortest counterexample whole, its replay command. --wide
// keeps every column on one line.
func TestTableFits120Columns(t *testing.T) {
	t.Parallel()
	rep := wideReport()
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for n, line := range strings.Split(out, "\n") {
		if w := runes(line); w > TableWidth {
			t.Errorf("line %d is %d columns wide, more than %d:\n%s", n+1, w, TableWidth, line)
		}
	}
	// Unwrapped, the table still says everything the narrow columns hold.
	flat := strings.Join(strings.Fields(out), " ")
	shortest := strings.Join(strings.Fields(columnText(out, "SHORTEST", "CONFIRMED")), " ")
	for _, s := range []string{"partition i2 from m0,m1,m2 @120ms for 280ms; clock-fast m1 x4.5 @10ms for 250ms; pause b3 before-commit 116ms",
		"not-linearizable: 6 buyers,"} {
		if !strings.Contains(shortest, s) {
			t.Errorf("the SHORTEST column, unwrapped, lacks %q: %s", s, shortest)
		}
	}
	byKind := columnText(out, "BY KIND", "SHORTEST")
	for _, k := range Kinds {
		if !regexp.MustCompile(`(^|\s)` + k + ` \d+`).MatchString(byKind) {
			t.Errorf("BY KIND splits %s from its count:\n%s", k, byKind)
		}
	}
	for _, m := range rep.Modes {
		want := []string{m.Mode, fmt.Sprint(m.Trials), "1234ms", "not-linearizable 1"}
		if m.Shortest != nil {
			want = append(want, "go run . explore --replay "+m.ReplayFile, "timeline: "+m.Timeline, m.Shortest.Detail)
		}
		if m.Errors > 0 {
			want = append(want, m.LastError)
		}
		for _, s := range want {
			if !strings.Contains(flat, s) {
				t.Errorf("%s: the table lacks %q:\n%s", m.Mode, s, out)
			}
		}
	}
	for _, s := range []string{"MODE", "BY KIND", "CONFIRMED", "seed 2026", "cannot draw failover: needs redis-sentinel"} {
		if !strings.Contains(flat, s) {
			t.Errorf("the table lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "\nnone ") || !strings.Contains(out, "\natomic ") {
		t.Errorf("every mode starts a line of its own:\n%s", out)
	}

	var wide bytes.Buffer
	if err := WriteWideTable(&wide, rep); err != nil {
		t.Fatal(err)
	}
	widest := 0
	for _, line := range strings.Split(wide.String(), "\n") {
		widest = max(widest, runes(line))
	}
	if !strings.Contains(wide.String(), "FAULTS DRAWN") || !strings.Contains(wide.String(), "IN TRIALS WITH") || widest <= TableWidth {
		t.Errorf("--wide keeps every column on one line (widest line %d):\n%s", widest, wide.String())
	}
}

// columnText is the text of a table's column, from where its title starts to where the next
// title starts, line after line.
func columnText(table, title, next string) string {
	var out []string
	from, to := -1, -1
	for _, line := range strings.Split(table, "\n") {
		if from < 0 {
			from, to = strings.Index(line, title), strings.Index(line, next)
			if from >= 0 && to < from {
				from = -1
			}
			continue
		}
		if len(line) > from {
			out = append(out, strings.TrimSpace(line[from:min(to, len(line))]))
		}
	}
	return strings.Join(out, "\n")
}

func TestWrapWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"", 5, []string{""}},
		{"lost-update 127, overlap 6", 16, []string{"lost-update 127,", "overlap 6"}},
		{"abcdefghij xy", 4, []string{"abcd", "efgh", "ij", "xy"}},
		{"a b c", 5, []string{"a b c"}},
	} {
		if got := wrapWords(c.in, c.width); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"-", 5, []string{"-"}},
		{"stale-write 100, lost-update 100, oversell 100", 27, []string{"stale-write 100,", "lost-update 100,", "oversell 100"}},
		{"lost: 2 buyers, crash b1 after-acquire; pause b0 reply-1 30ms", 20,
			[]string{"lost: 2 buyers,", "crash b1", "after-acquire;", "pause b0 reply-1", "30ms"}},
	} {
		if got := wrapCell(c.in, c.width); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrapCell(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}
