package simulate

import (
	"context"
	"fmt"
	"time"
)

// KindReport is one kind's part of `seckill simulate --json`.
type KindReport struct {
	Kind        string    `json:"kind"`
	Schedules   int       `json:"schedules"`
	States      int       `json:"states,omitempty"`
	Exhaustive  bool      `json:"exhaustive"`
	Complete    bool      `json:"complete"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Truncated   int       `json:"truncated"`
	Violations  int       `json:"violations"`
	ElapsedMs   int64     `json:"elapsedMs"`
	Seed        uint64    `json:"seed,omitempty"`
	Runs        int       `json:"runs,omitempty"` // a random search's runs: with the seed, the search again`
	Shortest    *Shortest `json:"shortest"`
	ReplayFile  string    `json:"replayFile,omitempty"`
}

// Shortest is the shortest counterexample of a kind.
type Shortest struct {
	Kind      string   `json:"kind"`
	Clients   int      `json:"clients"`
	Faults    []string `json:"faults"`
	Steps     int      `json:"steps"`
	TraceHash string   `json:"traceHash"`
	Violation string   `json:"violation"`
}

// Search is one kind's search: exhaustive, or seeded random for budget.
type Search struct {
	Config     Config
	Exhaustive bool
	Seed       uint64
	Runs       int // random: this many runs (0: as many as Budget allows)
	Budget     time.Duration
	Dir        string // where the replay file of the shortest counterexample goes ("" : nowhere)
}

// Run searches and reports. When ctx ends, it reports what was searched so far and
// Interrupted.
func (q Search) Run(ctx context.Context) (KindReport, error) {
	s, err := New(q.Config)
	if err != nil {
		return KindReport{}, err
	}
	var r *Result
	if q.Exhaustive {
		r = s.Exhaustive(ctx)
	} else {
		r = s.Random(ctx, q.Seed, q.Budget, q.Runs)
	}
	rep := KindReport{Kind: r.Kind, Schedules: r.Schedules, States: r.States, Exhaustive: r.Exhaustive,
		Complete: r.Complete, Interrupted: r.Interrupted, Truncated: r.Truncated, Violations: r.Violations, ElapsedMs: r.Elapsed.Milliseconds()}
	if !q.Exhaustive {
		rep.Seed, rep.Runs = q.Seed, r.Schedules
	}
	if r.Shortest == nil {
		return rep, nil
	}
	cfg := s.cfg
	faults := append([]string{}, cfg.Faults...)
	if len(faults) == 0 {
		faults = []string{"none"}
	}
	rep.Shortest = &Shortest{Kind: r.Kind, Clients: cfg.Clients, Faults: faults, Steps: r.Shortest.Steps,
		TraceHash: r.Shortest.World.TraceHash(), Violation: r.Shortest.Violation}
	if q.Dir != "" {
		name := fmt.Sprintf("%s-%dc-%s", r.Kind, cfg.Clients, r.Shortest.World.TraceHash()[:12])
		path, err := NewReplayFile(cfg, r.Shortest).Write(q.Dir, name)
		if err != nil {
			return rep, err
		}
		rep.ReplayFile = path
	}
	return rep, nil
}
