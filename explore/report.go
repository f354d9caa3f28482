package explore

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"seckill/internal/stall"
)

// WriteJSON writes the report as one JSON object.
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	return nil
}

// TableWidth is the width WriteTable keeps to; WriteWideTable (--wide) and the JSON have every
// column.
const TableWidth = 120

// narrow are WriteTable's columns with the most each may take, 119 columns in all with the
// gaps: a cell that needs more wraps onto the next line.
var narrow = []column{{"MODE", 14}, {"TRIALS", 6}, {"MEDIAN", 7}, {"VIOLATIONS", 10}, {"BY KIND", 27},
	{"SHORTEST (buyers, faults)", 34}, {"CONFIRMED", 9}}

// WriteTable writes the report within TableWidth columns: the run's settings, a table of one row
// per mode (a long cell wraps in its column), then each mode's shrunk counterexample with its
// replay and timeline files. The faults drawn and the violations by fault are in
// WriteWideTable and the JSON.
func WriteTable(w io.Writer, rep Report) error {
	var b strings.Builder
	writeSettings(&b, rep)
	rows := make([][]string, 0, len(rep.Modes))
	for _, m := range rep.Modes {
		short, conf := "-", "-"
		if m.Shortest != nil {
			short, conf = m.Shortest.line(), m.Shortest.Confirmed
		}
		rows = append(rows, []string{m.Mode, fmt.Sprint(m.Trials), fmt.Sprintf("%.0fms", m.MedianMs), fmt.Sprint(m.Violations),
			counts(m.ByKind, Kinds), short, conf})
	}
	writeWrapped(&b, narrow, rows)
	sep := "\n" // a blank line between the table and what follows it
	for _, m := range rep.Modes {
		if m.Errors > 0 || m.ReplayFile != "" || m.Starved > 0 {
			b.WriteString(sep)
			sep = ""
		}
		if m.Errors > 0 {
			b.WriteString(wrap(fmt.Sprintf("%s: %d trials could not run; last: %s", m.Mode, m.Errors, m.LastError)))
		}
		if m.Starved > 0 {
			b.WriteString(wrap(m.starvedLine(rep.LeaseMs)))
		}
		if m.ReplayFile != "" {
			b.WriteString(wrap(fmt.Sprintf("%s: %s", m.Mode, m.Shortest.Detail)))
			fmt.Fprintf(&b, "  replay: %s\n  timeline: %s\n", ReplayCommand(m.ReplayFile), m.Timeline)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	return nil
}

// WriteWideTable writes the report with every column on one line per mode, the faults drawn and
// the violations in trials with each fault included (about 300 columns).
func WriteWideTable(w io.Writer, rep Report) error {
	var b strings.Builder
	writeSettings(&b, rep)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tTRIALS\tMEDIAN\tFAULTS DRAWN\tVIOLATIONS\tBY KIND\tIN TRIALS WITH\tSHORTEST (buyers, faults)\tCONFIRMED")
	for _, m := range rep.Modes {
		short, conf := "-", "-"
		if m.Shortest != nil {
			short = m.Shortest.line()
			conf = m.Shortest.Confirmed
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0fms\t%s\t%d\t%s\t%s\t%s\t%s\n", m.Mode, m.Trials, m.MedianMs, counts(m.FaultsDrawn, Catalogue),
			m.Violations, counts(m.ByKind, Kinds), counts(m.ViolationsWith, append([]string{"none"}, Catalogue...)), short, conf)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	for _, m := range rep.Modes {
		if m.Errors > 0 {
			fmt.Fprintf(&b, "%s: %d trials could not run; last: %s\n", m.Mode, m.Errors, m.LastError)
		}
		if m.Starved > 0 {
			fmt.Fprintln(&b, m.starvedLine(rep.LeaseMs))
		}
		if m.ReplayFile != "" {
			fmt.Fprintf(&b, "%s: %s — replay: %s (timeline %s)\n", m.Mode, m.Shortest.Detail, ReplayCommand(m.ReplayFile), m.Timeline)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	return nil
}

// writeSettings writes the run's seed, lease, budget, servers and faults, and the faults it
// could not draw, wrapped to TableWidth, then a blank line.
func writeSettings(b *strings.Builder, rep Report) {
	b.WriteString(wrap(fmt.Sprintf("seed %d, lease %dms, %s per mode, %s; faults: %s", rep.Seed, rep.LeaseMs, rep.Budget,
		rep.Backend, strings.Join(rep.Faults, ", "))))
	for _, k := range sortedKeys(rep.Undrawable) {
		b.WriteString(wrap(fmt.Sprintf("cannot draw %s: %s", k, rep.Undrawable[k])))
	}
	b.WriteString("\n")
}

// column is a column of writeWrapped: its title and the most characters a line of it may take.
type column struct {
	title string
	max   int
}

// writeWrapped writes rows under the titles of cols, two spaces between columns, each cell
// wrapped at spaces to its column's max (a row takes as many lines as its tallest cell), each
// column as wide as its widest line.
func writeWrapped(b *strings.Builder, cols []column, rows [][]string) {
	cells := make([][][]string, len(rows)) // row, column, line
	width := make([]int, len(cols))
	for c, col := range cols {
		width[c] = runes(col.title)
	}
	for r, row := range rows {
		cells[r] = make([][]string, len(cols))
		for c, col := range cols {
			cells[r][c] = wrapCell(row[c], col.max)
			for _, l := range cells[r][c] {
				width[c] = max(width[c], runes(l))
			}
		}
	}
	line := func(parts []string) {
		var l strings.Builder
		for c, p := range parts {
			l.WriteString(p)
			if c < len(parts)-1 {
				l.WriteString(strings.Repeat(" ", width[c]-runes(p)+2))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	titles := make([]string, len(cols))
	for c, col := range cols {
		titles[c] = col.title
	}
	line(titles)
	for _, row := range cells {
		height := 0
		for _, cell := range row {
			height = max(height, len(cell))
		}
		for i := range height {
			parts := make([]string, len(row))
			for c, cell := range row {
				if i < len(cell) {
					parts[c] = cell[i]
				}
			}
			line(parts)
		}
	}
}

// wrapCell breaks a cell into lines of at most width characters, preferably after the ", " or
// "; " between its items ("lost-update 127, overlap 6"), so that an item and its count stay
// together; an item longer than a line is broken at spaces (wrapWords).
func wrapCell(s string, width int) []string {
	var items []string
	for _, part := range strings.SplitAfter(s, ", ") {
		for _, item := range strings.SplitAfter(part, "; ") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	}
	var lines []string
	cur := ""
	for _, item := range items {
		switch {
		case cur == "" && runes(item) <= width:
			cur = item
		case cur != "" && runes(cur)+1+runes(item) <= width:
			cur += " " + item
		case runes(item) <= width:
			lines, cur = append(lines, cur), item
		default: // an item longer than a line starts one of its own
			if cur != "" {
				lines = append(lines, cur)
			}
			ws := wrapWords(item, width)
			lines, cur = append(lines, ws[:len(ws)-1]...), ws[len(ws)-1]
		}
	}
	return append(lines, cur)
}

// wrapWords breaks s at spaces into lines of at most width characters; a word longer than a
// line is cut.
func wrapWords(s string, width int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		for runes(word) > width {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case cur == "":
			cur = word
		case runes(cur)+1+runes(word) <= width:
			cur += " " + word
		default:
			lines, cur = append(lines, cur), word
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// wrap breaks s into lines of at most TableWidth characters, the lines after the first
// indented by two spaces, each ended by a newline.
func wrap(s string) string {
	lines := wrapWords(s, TableWidth)
	if len(lines) > 1 {
		rest := wrapWords(strings.Join(lines[1:], " "), TableWidth-2)
		lines = lines[:1]
		for _, l := range rest {
			lines = append(lines, "  "+l)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func runes(s string) int { return len([]rune(s)) }

// ReplayCommand is the command that re-runs a replay file, as every page runs seckill.
func ReplayCommand(file string) string { return "go run . explore --replay " + file }

// starvedLine says how many violating trials of m were set aside as STARVED, and the longest
// stall among them against the lease.
func (m ModeResult) starvedLine(leaseMs int64) string {
	stalled := time.Duration(m.LongestStallMs * float64(time.Millisecond))
	return fmt.Sprintf("%s: %d violating trials STARVED, set aside (not counted, not shrunk): %s", m.Mode, m.Starved,
		stall.Why(stalled, time.Duration(leaseMs)*time.Millisecond))
}

// line is the counterexample in one line; a buyer with an explicit lease (no watchdog) is
// named, since it fails any lock whose section outlives the lease.
func (s *Shortest) line() string {
	f := "no fault"
	if len(s.Faults) > 0 {
		f = strings.Join(s.Faults, "; ")
	}
	return fmt.Sprintf("%s: %d buyers%s, %s", s.Kind, s.Buyers, s.LeaseNote(), f)
}

// LeaseNote is " (N with an explicit lease)" after the buyers of a counterexample some of whose
// buyers took an explicit lease, "" otherwise.
func (s *Shortest) LeaseNote() string {
	if s.ExplicitLeases == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d with an explicit lease)", s.ExplicitLeases)
}

// counts writes a count map in the order of keys, then any other key.
func counts(m map[string]int, order []string) string {
	var parts []string
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(order, k) && m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
