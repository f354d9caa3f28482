package lab_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"seckill/lab"
)

// detailsHead matches the header --details prints for a row: "ROW NAME (MODE) VERDICT: SENTENCE".
var detailsHead = regexp.MustCompile(`^\d+ (\S+) \([^)]*\) [A-Z]+: (.*)$`)

// passedCheck matches a "want X, got X" line: a check that passed, which says what was
// checked, not what broke.
var passedCheck = regexp.MustCompile(`want (.+), got (.+)$`)

// toldLines are the lines WriteTable prints under the table for a row (scenario name → line),
// each with its wrapped continuation lines joined back.
func toldLines(t *testing.T, table string, results []lab.Result) map[string]string {
	t.Helper()
	_, after, ok := strings.Cut(table, "\n\n")
	if !ok {
		return map[string]string{}
	}
	block, _, _ := strings.Cut(after, "\n\n") // the reasons of UNEXPECTED and SKIPPED rows follow
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if strings.HasPrefix(l, "  ") && len(lines) > 0 {
			lines[len(lines)-1] += " " + strings.TrimSpace(l)
			continue
		}
		lines = append(lines, l)
	}
	out := map[string]string{}
	for _, l := range lines {
		for _, r := range results {
			if strings.HasPrefix(l, r.Verdict+" "+r.Name+": ") {
				out[r.Name] = l
			}
		}
	}
	return out
}

// checkTold requires what the table prints under itself: for every REPRODUCED row the sentence
// --details heads that row with, for every UNEXPECTED row a failing check, never a check that
// passed ("want crashed, got crashed"), and nothing for a row that held; every line within 120
// columns.
func checkTold(t *testing.T, results []lab.Result) {
	t.Helper()
	var table, details bytes.Buffer
	if err := lab.WriteTable(&table, results); err != nil {
		t.Fatal(err)
	}
	if err := lab.WriteDetails(&details, results); err != nil {
		t.Fatal(err)
	}
	head := map[string]string{}
	for _, l := range strings.Split(details.String(), "\n") {
		if m := detailsHead.FindStringSubmatch(l); m != nil {
			head[m[1]] = m[2]
		}
	}
	for _, l := range strings.Split(table.String(), "\n") {
		if n := len([]rune(l)); n > lab.TableWidth {
			t.Errorf("a line is %d characters wide, more than %d: %s", n, lab.TableWidth, l)
		}
	}
	told := toldLines(t, table.String(), results)
	for _, r := range results {
		line, ok := told[r.Name]
		switch r.Verdict {
		case lab.Reproduced:
			want := r.Verdict + " " + r.Name + ": " + head[r.Name]
			if head[r.Name] == "" || line != want {
				t.Errorf("%s: the line under the table is\n\t%q\nwant the header --details prints\n\t%q", r.Name, line, want)
			}
		case lab.Unexpected:
			if len(r.Checks) > 0 && !ok {
				t.Errorf("%s went wrong and the table does not say what broke:\n%s", r.Name, table.String())
			}
		default:
			if ok {
				t.Errorf("%s %s: nothing broke, yet the table says %q", r.Name, r.Verdict, line)
			}
		}
		if m := passedCheck.FindStringSubmatch(line); m != nil && m[1] == m[2] {
			t.Errorf("%s: the line under the table repeats a check that passed: %q", r.Name, line)
		}
	}
}

// TestToldLinesSayWhatBroke: under the table, each row's line is the headline --details prints
// for it, even for rows whose first check is one that passed with want = got (setnx's "first
// holder: want crashed, got crashed", uuid's, failover's), and a long headline wraps rather than
// being cut.
func TestToldLinesSayWhatBroke(t *testing.T) {
	t.Parallel()
	var results []lab.Result
	for _, sc := range lab.Scenarios() {
		r := lab.Result{Name: sc.Name, Row: sc.Row, Mode: sc.Mode, Expect: sc.Expect, Short: sc.Short, Safe: sc.Safe,
			Verdict: want(sc), History: lab.Linearizable,
			Checks: []lab.Check{
				{What: "first holder (crash=after-lock)", Want: "crashed", Got: "crashed", OK: true},
				{What: "lost updates", Want: "> 0", Got: "2", OK: true},
			}}
		results = append(results, r)
	}
	results = append(results, lab.Result{Name: "broken", Row: 14, Mode: "lua", Expect: "no overlap", Verdict: lab.Unexpected,
		Reason: "overlaps: want 0, got 3", Checks: []lab.Check{
			{What: "sold", Want: "3", Got: "3", OK: true},
			{What: "overlaps", Want: "0", Got: "3", OK: false},
		}})
	checkTold(t, results)

	var b bytes.Buffer
	if err := lab.WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	told := toldLines(t, b.String(), results)
	if got, want := told["broken"], "UNEXPECTED broken: overlaps: want 0, got 3"; got != want {
		t.Errorf("an UNEXPECTED row's line is %q, want its first failing check %q", got, want)
	}
	long := 0
	for _, r := range results {
		if r.Verdict == lab.Reproduced && len(fmt.Sprintf("%s %s: %s", r.Verdict, r.Name, r.Expect)) > lab.TableWidth {
			long++
		}
	}
	if long == 0 {
		t.Error("no headline is longer than a line: the wrapping is not exercised")
	}
}
