package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestSectionSeesViolations: a hold that finds one it excludes inside, or makes more holders than
// its limit, is counted; holds one after the other are not.
func TestSectionSeesViolations(t *testing.T) {
	var bad atomic.Int64
	readers := &section{bad: &bad}
	writers := &section{limit: 1, excludes: readers, bad: &bad}
	readers.excludes = writers
	take := func(context.Context) (func(context.Context) error, error) {
		return func(context.Context) error { return nil }, nil
	}
	idle := func(context.Context) error { return nil }
	ctx := t.Context()
	for range 2 {
		_ = readers.hold(ctx, take, idle)
		_ = writers.hold(ctx, take, idle)
	}
	if bad.Load() != 0 {
		t.Fatalf("holds one after the other: %d violations", bad.Load())
	}
	// A writer inside a read, a reader inside that writer, a second writer inside both.
	_ = readers.hold(ctx, take, func(ctx context.Context) error {
		return writers.hold(ctx, take, func(ctx context.Context) error {
			return readers.hold(ctx, take, func(ctx context.Context) error { return writers.hold(ctx, take, idle) })
		})
	})
	if bad.Load() != 3 || readers.peak.Load() != 2 || writers.peak.Load() != 2 {
		t.Fatalf("%d violations, peaks %d readers %d writers; want 3, 2, 2", bad.Load(), readers.peak.Load(), writers.peak.Load())
	}
	if err := Violations([]Primitive{{Name: "readwrite", Violations: 3}}); !errors.Is(err, ErrViolation) {
		t.Fatalf("Violations = %v, want ErrViolation", err)
	}
}

// TestRunPrimitivesSmall: a short `bench --primitives` adds up on every line: holds made, none
// overlapping what it excludes, the semaphores never above their permits, and the read-write
// lock's writer counted. Speeds are not judged, nor how often the writer got in.
func TestRunPrimitivesSmall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Redis server")
	}
	ps, err := RunPrimitives(t.Context(), Options{Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Rounds: 1, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(primLines) {
		t.Fatalf("%d lines, want %d", len(ps), len(primLines))
	}
	for _, p := range ps {
		t.Logf("%+v", p)
		if p.Ops == 0 || p.PerSec <= 0 || p.MaxMs <= 0 || p.MaxInside < 1 || p.Violations != 0 {
			t.Errorf("%s: implausible figures %+v", p.Name, p)
		}
		if p.Permits > 0 && p.MaxInside > int64(p.Permits) {
			t.Errorf("%s: %d inside at once, over %d permits", p.Name, p.MaxInside, p.Permits)
		}
		// Whether the writer gets in depends on the readers' speed (a closed loop of them keeps it
		// out, docs/library.md), so only its attempts are required.
		if p.Permits == 0 && p.WriterMaxMs <= 0 {
			t.Errorf("%s: the writer's attempts were not counted: %+v", p.Name, p)
		}
	}
	if err := Violations(ps); err != nil {
		t.Fatal(err)
	}
}
