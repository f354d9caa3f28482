package lab_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"seckill/lab"
)

// TestLibraryRowsShowTheirFigures runs rows 14 and 15, which drive the library's read-write lock
// and semaphores with no sale: each must reach its verdict from its own checks, say DEADLOCK where
// waiters can never get in (Redisson's upgrade, the shrunken RSemaphore) and nowhere else, check no
// history, and print "-" for the sales figures it has none of.
func TestLibraryRowsShowTheirFigures(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	deadlock := map[string]bool{"rw-upgrade": false, "rw-upgrade-redisson": true, "rw-writer-starved": false,
		"semaphore-crash": true, "expirable-crash": false}
	var results []lab.Result
	for _, sc := range lab.Scenarios() {
		if !sc.Library {
			continue
		}
		wantDeadlock, ok := deadlock[sc.Name]
		if !ok {
			t.Errorf("row %d %s drives a library kind, and this test does not know it", sc.Row, sc.Name)
			continue
		}
		res := rerunStarvedScenario(t, r, sc, r.Run(context.Background(), sc))
		if res.Verdict == lab.Starved {
			t.Logf("%s still STARVED, not judged: %s", sc.Name, res.Reason)
			continue
		}
		if res.Verdict != want(sc) || len(res.Checks) < 3 {
			t.Errorf("%s: verdict %s with %d checks, want %s from 3 or more: %s", sc.Name, res.Verdict, len(res.Checks), want(sc), res.Reason)
		}
		if res.Deadlock != wantDeadlock {
			t.Errorf("%s: deadlock %v, want %v", sc.Name, res.Deadlock, wantDeadlock)
		}
		if !strings.HasPrefix(res.History, "n/a: the row sells nothing") || res.Buyers != 0 || res.Sold != 0 {
			t.Errorf("%s: history %q, %d buyers, %d sold: want no sales and no history", sc.Name, res.History, res.Buyers, res.Sold)
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		return
	}
	var b bytes.Buffer
	if err := lab.WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		line := ""
		for l := range strings.Lines(b.String()) {
			if f := strings.Fields(l); len(f) > 2 && f[1] == res.Name {
				line = l
			}
		}
		if f := strings.Fields(line); len(f) < 8 || strings.Join(f[3:8], " ") != "- - - - -" {
			t.Errorf("%s: the table's line %q, want - in its five sales columns", res.Name, line)
		}
	}
	checkTold(t, results)
}
