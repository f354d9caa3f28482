package explore

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
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

// WriteTable writes the report as a table, one row per mode, then each mode's shrunk
// counterexample in one line.
func WriteTable(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "seed %d, lease %dms, %s per mode, %s; faults: %s\n", rep.Seed, rep.LeaseMs, rep.Budget, rep.Backend,
		strings.Join(rep.Faults, ", "))
	for _, k := range sortedKeys(rep.Undrawable) {
		fmt.Fprintf(w, "cannot draw %s: %s\n", k, rep.Undrawable[k])
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
			fmt.Fprintf(w, "%s: %d trials could not run; last: %s\n", m.Mode, m.Errors, m.LastError)
		}
		if m.ReplayFile != "" {
			fmt.Fprintf(w, "%s: %s — replay: seckill explore --replay %s (timeline %s)\n", m.Mode, m.Shortest.Detail, m.ReplayFile, m.Timeline)
		}
	}
	return nil
}

// line is the counterexample in one line.
func (s *Shortest) line() string {
	f := "no fault"
	if len(s.Faults) > 0 {
		f = strings.Join(s.Faults, "; ")
	}
	return fmt.Sprintf("%s: %d buyers, %s", s.Kind, s.Buyers, f)
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
