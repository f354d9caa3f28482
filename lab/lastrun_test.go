package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/lab"
)

// TestLastRunIsKeptInRedis: a run is kept in the data Redis as its scenario's last run, so
// another Runner over the same Redis (another instance, or `seckill lab` in another process)
// reads it back; a scenario that has not run is absent.
func TestLastRunIsKeptInRedis(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	other := &lab.Runner{Data: r.Data}
	before, err := other.LastRuns(ctx)
	if err != nil || len(before) != 0 {
		t.Fatalf("before any run: %v, %v", before, err)
	}
	sc, err := lab.Lookup("atomic")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := r.Run(ctx, sc)
	if res.FinishedAt.Before(start) || res.FinishedAt.After(time.Now()) {
		t.Fatalf("finishedAt %s is not within the run (started %s)", res.FinishedAt, start)
	}
	got, err := other.LastRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := got[sc.Name]
	if !ok || len(got) != 1 {
		t.Fatalf("want the last run of %s alone, got %v", sc.Name, got)
	}
	if last.Verdict != res.Verdict || last.Sold != res.Sold || !last.FinishedAt.Equal(res.FinishedAt) ||
		len(last.Checks) != len(res.Checks) || len(last.Timeline) != len(res.Timeline) {
		t.Fatalf("kept %+v, ran %+v", last, res)
	}
	if ttl := r.Data.TTL(ctx, lab.LastRunKey(sc.Name)).Val(); ttl <= 0 || ttl > lab.LastRunTTL {
		t.Fatalf("the last run is kept with TTL %s, want (0, %s]", ttl, lab.LastRunTTL)
	}
}

// TestLastRunKeepsItsDrawing: a run whose history is not linearizable keeps the drawing of it in
// the data Redis with the run, even when it writes no file (as `seckill lab` runs), so another
// Runner over that Redis reads it back; the next run of the scenario, linearizable, takes it away.
func TestLastRunKeepsItsDrawing(t *testing.T) {
	r := newRunner(t)
	r.HistoryDir, r.NoHistoryFiles = "", true
	ctx := context.Background()
	other := &lab.Runner{Data: r.Data}
	if _, page, ok, err := other.LastHistory(ctx, "none"); ok || page != nil || err != nil {
		t.Fatalf("before any run: ok %v, %d bytes, %v", ok, len(page), err)
	}
	sc, err := lab.Lookup("none")
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(ctx, sc)
	if res.History != lab.NotLinearizable || !res.HistoryKept || res.HistoryFile != "" {
		t.Fatalf("none: history %q, kept %v, file %q; want NOT linearizable, kept, no file", res.History, res.HistoryKept, res.HistoryFile)
	}
	last, page, ok, err := other.LastHistory(ctx, "none")
	if err != nil || !ok || !last.FinishedAt.Equal(res.FinishedAt) || !last.HistoryKept {
		t.Fatalf("the last run of none read back: ok %v, %+v, %v", ok, last, err)
	}
	if !strings.Contains(string(page), "<title>seckill lab, row 1 none: ") {
		t.Fatalf("the drawing kept with none's run does not name it: %.300s", page)
	}
	if ttl := r.Data.TTL(ctx, lab.LastHistoryKey("none")).Val(); ttl <= 0 || ttl > lab.LastRunTTL {
		t.Fatalf("the drawing is kept with TTL %s, want (0, %s]", ttl, lab.LastRunTTL)
	}
	// atomic's experiment under none's name: a linearizable last run of none, with no drawing.
	safe, err := lab.Lookup("atomic")
	if err != nil {
		t.Fatal(err)
	}
	safe.Name = "none"
	if res := r.Run(ctx, safe); res.History != lab.Linearizable || res.HistoryKept {
		t.Fatalf("atomic's experiment as none: history %q, kept %v", res.History, res.HistoryKept)
	}
	if _, page, ok, err := other.LastHistory(ctx, "none"); !ok || page != nil || err != nil {
		t.Fatalf("after a linearizable run: ok %v, a drawing of %d bytes, %v", ok, len(page), err)
	}
	if n := r.Data.Exists(ctx, lab.LastHistoryKey("none")).Val(); n != 0 {
		t.Fatalf("the older drawing is still in Redis")
	}
}
