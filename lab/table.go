package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints results as an aligned table that fits 120 columns, then, for each row that
// reproduced its bug or went wrong, what broke (wrapped to 120 columns), then the reason of every
// UNEXPECTED, STARVED or SKIPPED verdict. A legend line under the table says what the columns
// count (Legend).
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSCENARIO\tMODE\tSOLD\tLOST\tOVERSOLD\tOVERLAPS\tSTALE\tHISTORY\tTIME\tVERDICT")
	for _, r := range results {
		sold := fmt.Sprintf("%d/%d", r.Sold, r.Initial)
		figs := []string{sold, fmt.Sprint(r.Lost), fmt.Sprint(r.Oversold), fmt.Sprint(r.Overlaps), fmt.Sprint(r.StaleRejected)}
		if sellsNothing(r) {
			figs = []string{"-", "-", "-", "-", "-"}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.1fs\t%s\n",
			r.Row, r.Name, r.Mode, strings.Join(figs, "\t"), historyTiny(r.History), r.DurationMs/1000, r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lab: write table: %w", err)
	}
	return writeTold(w, results)
}

// Legend says what the table's columns count, printed under it.
const Legend = "SOLD: orders recorded/initial stock (30/10: 30 orders for 10 units, oversold). " +
	"OVERLAPS: sales that entered the read-check-write while another was inside. " +
	"STALE: writes the fencing token rejected (why fenced can overlap and lose nothing). " +
	"HISTORY: the buyers' answers, linearizable (lin.) or not. " +
	"STARVED: the machine stalled for 2/3 of the row's lease or more; rerun it."

// WriteWideTable prints every column: the table of WriteTable plus the source of each step, what
// the row expects, and the foreign unlocks, deadlocks, stale writes rejected by the fence and
// watchdog renewals.
func WriteWideTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSCENARIO\tMODE\tSOURCE\tEXPECTED\tSOLD\tINIT\tLOST\tOVERSOLD\tOVERLAPS\tFOREIGN\tDEADLOCK\tSTALE\tRENEWALS\tTIME\tHISTORY\tVERDICT")
	for _, r := range results {
		sales := []string{fmt.Sprint(r.Sold), fmt.Sprint(r.Initial), fmt.Sprint(r.Lost), fmt.Sprint(r.Oversold),
			fmt.Sprint(r.Overlaps), fmt.Sprint(r.ForeignUnlocks)}
		more := []string{fmt.Sprint(r.StaleRejected), fmt.Sprint(r.Renewals)}
		if sellsNothing(r) {
			sales, more = []string{"-", "-", "-", "-", "-", "-"}, []string{"-", "-"}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1fs\t%s\t%s\n",
			r.Row, r.Name, r.Mode, r.Step, r.Short, strings.Join(sales, "\t"), yesNo(r.Deadlock), strings.Join(more, "\t"),
			r.DurationMs/1000, historyShort(r.History), r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lab: write table: %w", err)
	}
	return writeTold(w, results)
}

// writeTold prints, under the table, what broke: for each row that reproduced its bug the
// sentence --details heads it with (its headline), for each row that went wrong its first
// failing check; then why a row went wrong or was skipped. A check that passed ("want crashed,
// got crashed") never stands there: it says what was checked, not what broke.
func writeTold(w io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString(wrapLine(Legend) + "\n")
	for _, r := range results {
		if line, ok := told(r); ok {
			b.WriteString(wrapLine(line) + "\n")
		}
	}
	for _, r := range results {
		if r.Verdict == Unexpected || r.Verdict == Starved || r.Verdict == Skipped {
			b.WriteString("\n" + fitLine(fmt.Sprintf("%s: %s: %s", r.Name, r.Verdict, r.Reason)) + "\n")
		}
	}
	if _, err := io.WriteString(w, "\n"+b.String()); err != nil {
		return fmt.Errorf("lab: write table: %w", err)
	}
	return nil
}

// told is the line under the table that says what happened in r, unwrapped: the headline of a
// row that reproduced its bug, the first failing check of a row that went wrong; none for a row
// that held or was skipped.
func told(r Result) (string, bool) {
	switch r.Verdict {
	case Reproduced:
		return fmt.Sprintf("%s %s: %s", r.Verdict, r.Name, headline(r)), true
	case Unexpected:
		for _, c := range r.Checks {
			if !c.OK {
				return fmt.Sprintf("%s %s: %s: want %s, got %s", r.Verdict, r.Name, c.What, c.Want, c.Got), true
			}
		}
	}
	return "", false
}

// headline is the sentence that says what the row is about, its bug for a row that reproduces
// one: what --details prints after the verdict and the line under the table repeats.
func headline(r Result) string { return r.Expect }

// TableWidth is the width WriteTable keeps to; --details (WriteDetails) has the full reasons.
const TableWidth = 120

// fitLine cuts s to TableWidth characters.
func fitLine(s string) string {
	if r := []rune(s); len(r) > TableWidth {
		return string(r[:TableWidth-1]) + "…"
	}
	return s
}

// wrapLine breaks s at spaces into lines of at most TableWidth characters, the lines after the
// first indented by two spaces (a word longer than a line is cut by fitLine).
func wrapLine(s string) string {
	const indent = "  "
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= TableWidth:
			line += " " + word
		default:
			lines = append(lines, fitLine(line))
			line = indent + word
		}
	}
	return strings.Join(append(lines, fitLine(line)), "\n")
}

// historyTiny is historyShort in a narrow column.
func historyTiny(h string) string {
	switch h {
	case Linearizable:
		return "lin."
	case NotLinearizable:
		return "NOT lin."
	}
	return historyShort(h)
}

// WriteDetails prints every check, phase and note of each result: why each verdict is what it is.
func WriteDetails(w io.Writer, results []Result) error {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "\n%d %s (%s) %s: %s\n", r.Row, r.Name, r.Mode, r.Verdict, headline(r))
		for _, c := range r.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(&b, "  %s %s: want %s, got %s\n", mark, c.What, c.Want, c.Got)
		}
		for _, p := range r.Phases {
			fmt.Fprintf(&b, "  phase %q: sold %d of %d, lost %d, overlaps %d, lock keys left %d, answers %v\n",
				p.Name, p.Sold, p.Initial, p.Lost, p.Overlaps, p.LeftKeys, p.Outcomes)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		fmt.Fprintf(&b, "  buyers %d, answers %v\n", r.Buyers, r.Outcomes)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("lab: write details: %w", err)
	}
	return nil
}

// WriteJSON prints results as an indented JSON array.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		return fmt.Errorf("lab: write json: %w", err)
	}
	return nil
}

// AnyUnexpected reports whether some result is UNEXPECTED (a SKIPPED or STARVED one is not).
func AnyUnexpected(results []Result) bool {
	for _, r := range results {
		if r.Verdict != Reproduced && r.Verdict != Held && r.Verdict != Skipped && r.Verdict != Starved {
			return true
		}
	}
	return false
}

// CountStarved counts the STARVED results: rows the machine's stalls left undecided.
func CountStarved(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Verdict == Starved {
			n++
		}
	}
	return n
}

// sellsNothing reports whether r is the run of a row that drives a library kind directly
// (Scenario.Library): its sales figures are none, and the tables print "-" for them.
func sellsNothing(r Result) bool {
	sc, err := Lookup(r.Name)
	return err == nil && sc.Library
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
