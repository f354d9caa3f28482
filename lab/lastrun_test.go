package lab_test

import (
	"context"
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
