package lab_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/internal/redisproc"
	"seckill/internal/testredis"
	"seckill/lab"
)

// failoverRuns is how often row 12 runs: once by default, 3 times with SECKILL_TEST_LONG=1 (each
// run starts and fails over two or three Sentinel topologies, a few seconds each);
// SECKILL_FAILOVER_RUNS overrides both.
func failoverRuns(t *testing.T) int {
	if v := os.Getenv("SECKILL_FAILOVER_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SECKILL_FAILOVER_RUNS=%q is not a positive number", v)
		}
		return n
	}
	if testredis.Long() {
		return 3
	}
	return 1
}

// TestFailoverVerdictsAreStable runs row 12 again and again: REPRODUCED without waiting for a
// replica, HELD with lock.waitReplicas=1, every time, with a history verdict that agrees with
// the counters; SKIPPED (never UNEXPECTED) where redis-sentinel is not installed.
func TestFailoverVerdictsAreStable(t *testing.T) {
	t.Parallel()
	names := []string{"failover", "failover-wait"}
	r := newRunner(t)
	n := failoverRuns(t)
	var took []string
	for i := range n {
		start := time.Now()
		results, err := r.RunAll(context.Background(), names)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		took = append(took, time.Since(start).Round(10*time.Millisecond).String())
		if len(results) != len(names) {
			t.Fatalf("run %d: %d results, want %d", i+1, len(results), len(names))
		}
		failed := false
		for _, res := range results {
			sc, err := lab.Lookup(res.Name)
			if err != nil {
				t.Fatal(err)
			}
			want := want(sc)
			if !redisproc.SentinelInstalled() {
				want = lab.Skipped
			}
			if res.Verdict != want {
				failed = true
				t.Errorf("run %d: %s: verdict %s, want %s: %s", i+1, res.Name, res.Verdict, want, res.Reason)
			}
			historyAgrees(t, i+1, res)
			if res.Row != 12 || res.Mode != "reentrant" {
				t.Errorf("%s: row %d mode %s, want row 12 on reentrant", res.Name, res.Row, res.Mode)
			}
		}
		if i == 0 || failed {
			var b bytes.Buffer
			if err := lab.WriteTable(&b, results); err != nil {
				t.Fatal(err)
			}
			if err := lab.WriteDetails(&b, results); err != nil {
				t.Fatal(err)
			}
			t.Logf("run %d:\n%s", i+1, b.String())
		}
		if !redisproc.SentinelInstalled() {
			t.Skip("redis-sentinel not installed: row 12 is SKIPPED, as it should be")
		}
	}
	t.Logf("%d runs of row 12 took %s", n, strings.Join(took, ", "))
}

// TestFailoverSkippedWithoutOutages: with outages off the scenario does not start (it would kill
// a master), and says so with SKIPPED, which is not a failure of the lab.
func TestFailoverSkippedWithoutOutages(t *testing.T) {
	r := newRunner(t)
	r.NoOutages = true
	results, err := r.RunAll(context.Background(), []string{"failover"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Verdict != lab.Skipped || !strings.Contains(results[0].Reason, "outages") {
		t.Fatalf("want SKIPPED naming the outages, got %+v", results)
	}
	if lab.AnyUnexpected(results) {
		t.Fatal("a SKIPPED verdict counted as UNEXPECTED")
	}
	var b bytes.Buffer
	if err := lab.WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "failover: SKIPPED: ") {
		t.Fatalf("the table does not say why it was skipped:\n%s", b.String())
	}
}
