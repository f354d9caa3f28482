package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Found is a run that broke a property.
type Found struct {
	Violation string
	Steps     int
	Choices   []int
	Seed      uint64
	World     *World
}

// Result is what a search reports.
type Result struct {
	Kind        string
	Schedules   int // runs followed to their end (or to a state already explored)
	States      int // distinct states explored (exhaustive)
	Exhaustive  bool
	Complete    bool // the exhaustive search ended within its bounds (no run hit MaxSteps, not interrupted)
	Interrupted bool // ctx ended the search before it was done
	Truncated   int  // runs stopped at MaxSteps
	Violations  int
	Shortest    *Found
	Elapsed     time.Duration
}

func (r *Result) found(w *World, seed uint64) {
	r.Violations++
	if r.Shortest == nil || w.steps < r.Shortest.Steps {
		r.Shortest = &Found{Violation: w.Violation, Steps: w.steps, Choices: w.Choices(), Seed: seed, World: w}
	}
}

// Exhaustive explores every schedule within the bounds, depth first. A state reached before at
// the same depth or less is not explored again (state hashing: the clock, every master's data
// with its TTLs, every client's step machine, the messages in flight, the resource, and how long
// the lock has been calm and what fault effect is still on, for the liveness check), which
// keeps the shortest counterexample exact. When ctx ends, the search stops where it is
// (Interrupted, not Complete).
func (s *Sim) Exhaustive(ctx context.Context) *Result {
	start := time.Now()
	r := &Result{Kind: s.cfg.Kind, Exhaustive: true, Complete: true}
	seen := map[[16]byte]int{}
	var dfs func(w *World)
	dfs = func(w *World) {
		if r.Interrupted || ctx.Err() != nil {
			r.Interrupted, r.Complete = true, false
			return
		}
		if w.Violation != "" {
			r.Schedules++
			r.found(w, 0)
			return
		}
		if w.Finished {
			r.Schedules++
			return
		}
		if w.steps >= s.cfg.MaxSteps {
			r.Schedules++
			r.Truncated++
			r.Complete = false
			return
		}
		h := w.hash(s.kind.relook(s))
		if d, ok := seen[h]; ok && d <= w.steps {
			r.Schedules++
			return
		}
		seen[h] = w.steps
		ch := s.Choices(w)
		for i, c := range ch {
			next := w.clone()
			s.Apply(next, c, i)
			dfs(next)
		}
	}
	dfs(s.Start())
	r.States = len(seen)
	r.Elapsed = time.Since(start)
	return r
}

// Random runs seeded random schedules: runs of them when runs > 0 (the same search on every
// machine), else until budget (wall time) is spent. Each run's choices come from a PCG generator
// seeded with (seed, run number) alone, so a run never depends on timing. When ctx ends, the
// search stops after the run in progress (Interrupted).
func (s *Sim) Random(ctx context.Context, seed uint64, budget time.Duration, runs int) *Result {
	start := time.Now()
	r := &Result{Kind: s.cfg.Kind}
	for run := uint64(0); runs <= 0 || int(run) < runs; run++ {
		if runs <= 0 && run > 0 && time.Since(start) >= budget {
			break
		}
		if ctx.Err() != nil {
			r.Interrupted = true
			break
		}
		w := s.RunSeed(seed + run)
		r.Schedules++
		if w.Violation != "" {
			r.found(w, seed+run)
		} else if !w.Finished {
			r.Truncated++
		}
	}
	r.Elapsed = time.Since(start)
	return r
}

// RunSeed runs one schedule chosen by a PCG generator seeded with seed.
func (s *Sim) RunSeed(seed uint64) *World {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	w := s.Start()
	for w.steps < s.cfg.MaxSteps {
		ch := s.Choices(w)
		if len(ch) == 0 {
			break
		}
		i := rng.IntN(len(ch))
		s.Apply(w, ch[i], i)
	}
	return w
}

// Replay runs the schedule given by its choices.
func (s *Sim) Replay(choices []int) (*World, error) {
	w := s.Start()
	for n, i := range choices {
		ch := s.Choices(w)
		if i < 0 || i >= len(ch) {
			return w, fmt.Errorf("simulate: replay step %d: choice %d of %d", n+1, i, len(ch))
		}
		s.Apply(w, ch[i], i)
	}
	return w, nil
}
