package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints results as an aligned table, then the reason of every UNEXPECTED or SKIPPED verdict.
// SOURCE cites the source tutorials (docs/scenarios.md), FOREIGN counts foreign unlocks, STALE
// the stale writes the fence rejected, RENEWALS the watchdog renewals of the buyers' leases.
// HISTORY is the client-side verdict: whether the sales the buyers recorded are linearizable.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSCENARIO\tMODE\tSOURCE\tEXPECTED\tSOLD\tINIT\tLOST\tOVERSOLD\tOVERLAPS\tFOREIGN\tDEADLOCK\tSTALE\tRENEWALS\tTIME\tHISTORY\tVERDICT")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%.1fs\t%s\t%s\n",
			r.Row, r.Name, r.Mode, r.Step, r.Short, r.Sold, r.Initial, r.Lost, r.Oversold, r.Overlaps,
			r.ForeignUnlocks, yesNo(r.Deadlock), r.StaleRejected, r.Renewals, r.DurationMs/1000, historyShort(r.History), r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lab: write table: %w", err)
	}
	for _, r := range results {
		if r.Verdict == Unexpected || r.Verdict == Skipped {
			if _, err := fmt.Fprintf(w, "\n%s: %s: %s\n", r.Name, r.Verdict, r.Reason); err != nil {
				return fmt.Errorf("lab: write table: %w", err)
			}
		}
	}
	return nil
}

// WriteDetails prints every check, phase and note of each result: why each verdict is what it is.
func WriteDetails(w io.Writer, results []Result) error {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "\n%d %s (%s) %s: %s\n", r.Row, r.Name, r.Mode, r.Verdict, r.Expect)
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

// AnyUnexpected reports whether some result is UNEXPECTED (a SKIPPED one is not).
func AnyUnexpected(results []Result) bool {
	for _, r := range results {
		if r.Verdict != Reproduced && r.Verdict != Held && r.Verdict != Skipped {
			return true
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
