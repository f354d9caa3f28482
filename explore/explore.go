// Package explore finds each lock mode's failure without being told how, the way Jepsen does:
// a generator draws a random workload from a seed (2 to 6 buyers over 1 to 3 service
// instances, section times up to twice the lease, the watchdog or an explicit lease), a nemesis
// draws random faults from one catalogue that never looks at the mode (Catalogue), and a
// checker judges each trial from what the buyers recorded alone (check.go). For each mode's
// smallest violation, a shrinker looks for a smaller schedule that still fails, re-running each
// candidate to confirm it, and writes it as a JSON file that Replay re-runs, with porcupine's
// timeline of the shrunk run beside it.
//
// Trials run on Redis servers started once (rig.go) and flushed between trials; only a fault
// that needs it restarts a server.
package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"seckill/internal/history"
	"seckill/internal/modes"
)

// Errors, checked with errors.Is.
var (
	ErrUnknownFault = errors.New("explore: unknown fault")
	// ErrCannotDraw: a schedule names a fault the rig cannot inject (an in-process Redis cannot
	// be stopped; failover needs redis-sentinel).
	ErrCannotDraw = errors.New("explore: this Redis cannot inject fault")
)

// DefaultModes are the modes explored when none are named: every lock the story
// compares, in row order.
var DefaultModes = []string{"none", "setnx", "setnx-expire", "setnx-ex", "uuid", "lua", "reentrant", "redlock", "fenced", "atomic"}

// DefaultLease is the explorer's lease: short, so that a trial without a restart takes a few
// hundred milliseconds, and long enough for a watchdog renewing every third of it on a loaded
// 2-core machine.
const DefaultLease = 100 * time.Millisecond

// Options tune an exploration.
type Options struct {
	Modes []string
	// Budget is the exploring time per mode; shrinking its smallest violation comes on top,
	// bounded by ShrinkBudget.
	Budget       time.Duration
	ShrinkBudget time.Duration
	Seed         uint64
	// Faults is the catalogue to draw from (nil: every fault the rig can inject).
	Faults []string
	Lease  time.Duration
	// Dir receives each mode's replay file and timeline (default: the OS temp dir).
	Dir string
	// Progress, if set, is told after every trial and when a mode is done.
	Progress func(Progress)
}

// Progress is the state of one mode's exploration.
type Progress struct {
	Mode       string
	Trials     int
	Violations int
	Left       time.Duration
	Phase      string // "exploring", "shrinking", "done"
	Result     *ModeResult
}

// Shortest is a mode's shrunk counterexample.
type Shortest struct {
	Kind   string   `json:"kind"`
	Buyers int      `json:"buyers"`
	Faults []string `json:"faults"`
	// ExplicitLeases is how many of its buyers took an explicit lease (no watchdog: a section
	// longer than the lease outlives it, whatever the lock), as the schedule drew them.
	ExplicitLeases int `json:"explicitLeases,omitempty"`
	// Confirmed is how many of the confirming re-runs of the shrunk schedule failed the same way.
	Confirmed string `json:"confirmed"`
	Detail    string `json:"detail"`
}

// ModeResult is one mode's row of the report.
type ModeResult struct {
	Mode       string `json:"mode"`
	Trials     int    `json:"trials"`
	Violations int    `json:"violations"`
	// ByKind counts the violating trials by their kind (the first Kinds each shows).
	ByKind map[string]int `json:"byKind"`
	// FaultsDrawn counts the faults drawn, by kind.
	FaultsDrawn map[string]int `json:"faultsDrawn"`
	// ViolationsWith counts the violating trials that drew each fault kind ("none": no fault).
	ViolationsWith map[string]int `json:"violationsWith"`
	// ViolatingTrials are the trial numbers that failed: Draw(seed, n, faults, lease) redraws each.
	ViolatingTrials []int     `json:"violatingTrials,omitempty"`
	Shortest        *Shortest `json:"shortest"`
	ReplayFile      string    `json:"replayFile,omitempty"`
	Timeline        string    `json:"timeline,omitempty"`
	// Starved counts the violating trials set aside because the process stalled during them for
	// at least 2/3 of the lease (Outcome.Starved): not violations, and never shrunk.
	Starved int `json:"starved,omitempty"`
	// LongestStallMs is the longest stall among the starved trials.
	LongestStallMs float64 `json:"longestStallMs,omitempty"`
	// Errors counts trials that could not run (not violations).
	Errors     int     `json:"errors,omitempty"`
	LastError  string  `json:"lastError,omitempty"`
	MedianMs   float64 `json:"trialMedianMs"`
	DurationMs float64 `json:"durationMs"`
}

// Report is the whole exploration.
type Report struct {
	Seed    uint64   `json:"seed"`
	LeaseMs int64    `json:"leaseMs"`
	Backend string   `json:"backend"`
	Faults  []string `json:"faults"`
	// Undrawable names the faults asked for that this Redis cannot inject, and why.
	Undrawable map[string]string `json:"undrawable,omitempty"`
	Budget     string            `json:"budgetPerMode"`
	Modes      []ModeResult      `json:"modes"`
}

// Replay is a shrunk counterexample as written to its file.
type Replay struct {
	Mode     string   `json:"mode"`
	Kind     string   `json:"kind"`
	Schedule Schedule `json:"schedule"`
	// Faults and Violations are for the reader; Replay runs Schedule.
	Faults     []string    `json:"faults"`
	Confirmed  string      `json:"confirmed"`
	Violations []Violation `json:"violations"`
	Timeline   string      `json:"timeline,omitempty"`
	Records    []Record    `json:"records"`
	Events     []Event     `json:"events,omitempty"`
}

// Explore runs every mode of opt on rig, one after the other.
func Explore(ctx context.Context, rig *Rig, opt Options) (Report, error) {
	if opt.Lease <= 0 {
		opt.Lease = DefaultLease
	}
	if len(opt.Modes) == 0 {
		opt.Modes = DefaultModes
	}
	if opt.Faults == nil {
		opt.Faults = rig.Drawable
	}
	rep := Report{Seed: opt.Seed, LeaseMs: opt.Lease.Milliseconds(), Backend: rig.Backend,
		Undrawable: rig.Undrawable(opt.Faults), Budget: opt.Budget.String()}
	for _, f := range opt.Faults {
		if slices.Contains(rig.Drawable, f) {
			rep.Faults = append(rep.Faults, f)
		}
	}
	if len(rep.Undrawable) == 0 {
		rep.Undrawable = nil
	}
	picked := make([]modes.Mode, 0, len(opt.Modes))
	for _, name := range opt.Modes {
		m, err := modes.LookupMode(name)
		if err != nil {
			return rep, err
		}
		picked = append(picked, m)
	}
	for _, m := range picked {
		res, err := exploreMode(ctx, rig, m, rep.Faults, opt)
		rep.Modes = append(rep.Modes, res)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// exploreMode runs trials of one mode for the budget, then shrinks its smallest violation.
func exploreMode(ctx context.Context, rig *Rig, mode modes.Mode, faults []string, opt Options) (ModeResult, error) {
	start := time.Now()
	res := ModeResult{Mode: mode.Name, ByKind: map[string]int{}, FaultsDrawn: map[string]int{}, ViolationsWith: map[string]int{}}
	tell := func(phase string, left time.Duration) {
		if opt.Progress != nil {
			opt.Progress(Progress{Mode: mode.Name, Trials: res.Trials, Violations: res.Violations, Left: left, Phase: phase})
		}
	}
	var smallest *Outcome
	var took []float64
	deadline := start.Add(opt.Budget)
	for trial := 0; time.Now().Before(deadline); trial++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		s := Draw(opt.Seed, trial, faults, opt.Lease)
		out, err := rig.Run(ctx, mode, s)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Errors++
			res.LastError = err.Error()
			if res.Errors > 20 && res.Errors > res.Trials {
				return res, fmt.Errorf("explore: mode %s: most trials fail to run: %w", mode.Name, err)
			}
			continue
		}
		res.Trials++
		took = append(took, out.DurationMs)
		if out.Kind() != "" && setAside(mode, out) {
			res.Starved++
			res.LongestStallMs = max(res.LongestStallMs, out.StallMs)
			tell("exploring", time.Until(deadline))
			continue
		}
		for _, f := range s.Faults {
			res.FaultsDrawn[f.Kind]++
		}
		if k := out.Kind(); k != "" {
			res.Violations++
			res.ByKind[k]++
			res.ViolatingTrials = append(res.ViolatingTrials, trial)
			seen := map[string]bool{}
			for _, f := range s.Faults {
				if !seen[f.Kind] {
					seen[f.Kind] = true
					res.ViolationsWith[f.Kind]++
				}
			}
			if len(s.Faults) == 0 {
				res.ViolationsWith["none"]++
			}
			if smallest == nil || s.size() < smallest.Schedule.size() {
				smallest = &out
			}
		}
		tell("exploring", time.Until(deadline))
	}
	res.MedianMs = median(took)
	if smallest != nil {
		tell("shrinking", 0)
		budget := opt.ShrinkBudget
		if budget <= 0 {
			budget = max(opt.Budget/2, 20*time.Second)
		}
		sh, err := Shrink(ctx, rig, mode, *smallest, budget)
		if err != nil {
			return res, err
		}
		res.Shortest = &Shortest{Kind: sh.Kind, Buyers: len(sh.Outcome.Schedule.Buyers),
			ExplicitLeases: sh.Outcome.Schedule.explicitLeases(), Faults: sh.Outcome.Schedule.FaultStrings(), Confirmed: sh.Confirmed}
		if v := find(sh.Outcome.Violations, sh.Kind); v != nil {
			res.Shortest.Detail = v.Detail
		}
		if res.Shortest.Faults == nil {
			res.Shortest.Faults = []string{}
		}
		res.ReplayFile, res.Timeline, err = writeReplay(opt.Dir, mode.Name, sh)
		if err != nil {
			return res, err
		}
	}
	res.DurationMs = float64(time.Since(start).Milliseconds())
	if opt.Progress != nil {
		opt.Progress(Progress{Mode: mode.Name, Trials: res.Trials, Violations: res.Violations, Phase: "done", Result: &res})
	}
	return res, nil
}

// setAside reports whether a violating trial of mode is STARVED rather than counted: the mode
// is a safe lock with a lease (a stall cannot explain a violation of the atomic decrement, nor
// excuse an unsafe lock, whose safety depending on the machine's speed is its bug), and the
// process stalled for 2/3 of that lease during the trial.
func setAside(mode modes.Mode, out Outcome) bool { return mode.Safe && !mode.Atomic && out.Starved() }

func find(vs []Violation, kind string) *Violation {
	for i := range vs {
		if vs[i].Kind == kind {
			return &vs[i]
		}
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// writeReplay writes the shrunk counterexample and the timeline of its run into dir.
func writeReplay(dir, mode string, sh Shrunk) (file, timeline string, err error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "seckill-explore")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("explore: %w", err)
	}
	timeline = filepath.Join(dir, mode+".html")
	if err := writeTimeline(timeline, sh.Outcome); err != nil {
		return "", "", err
	}
	o := sh.Outcome
	r := Replay{Mode: mode, Kind: sh.Kind, Schedule: o.Schedule, Faults: o.Schedule.FaultStrings(), Confirmed: sh.Confirmed,
		Violations: o.Violations, Timeline: timeline, Records: o.Records, Events: o.Events}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", "", fmt.Errorf("explore: %w", err)
	}
	file = filepath.Join(dir, mode+".json")
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("explore: %w", err)
	}
	return file, timeline, nil
}

// writeTimeline draws the run's sales with porcupine's visualisation (the lab's timeline).
func writeTimeline(path string, o Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	src := history.Source{Title: "seckill explore: the timeline of " + o.Mode + "'s shrunk counterexample",
		Kind: "Counterexample", About: fmt.Sprintf("%d buyers, faults [%s]", len(o.Schedule.Buyers),
			strings.Join(o.Schedule.FaultStrings(), "; ")), Mode: o.Mode,
		Expect: "a buyer marked \"explicit lease\" took a lease without a watchdog"}
	if o.Schedule.explicitLeases() == 0 {
		src.Expect = ""
	}
	_, err = history.WriteHTML(f, src, o.Schedule.Stock, time.Time{}, sales(o))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadReplay reads a replay file.
func ReadReplay(path string) (Replay, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Replay{}, fmt.Errorf("explore: %w", err)
	}
	var r Replay
	if err := json.Unmarshal(b, &r); err != nil {
		return Replay{}, fmt.Errorf("explore: replay file %s: %w", path, err)
	}
	if r.Mode == "" || r.Kind == "" || len(r.Schedule.Buyers) == 0 {
		return Replay{}, fmt.Errorf("explore: replay file %s: no mode, kind or buyers", path)
	}
	return r, nil
}

// ReplayResult is what re-running a replay file found.
type ReplayResult struct {
	Mode       string `json:"mode"`
	Kind       string `json:"kind"`
	Reproduced int    `json:"reproduced"`
	Of         int    `json:"of"`
	// Starved counts the runs that showed the kind while the process stalled for 2/3 of the
	// lease or more (Outcome.Starved): set aside, not in Reproduced.
	Starved int            `json:"starved,omitempty"`
	Kinds   map[string]int `json:"kinds"`
}

// RunReplay re-runs r's schedule times times and counts the runs that show its kind again.
func RunReplay(ctx context.Context, rig *Rig, r Replay, times int) (ReplayResult, error) {
	mode, err := modes.LookupMode(r.Mode)
	if err != nil {
		return ReplayResult{}, err
	}
	res := ReplayResult{Mode: r.Mode, Kind: r.Kind, Kinds: map[string]int{}}
	for range times {
		out, err := rig.Run(ctx, mode, r.Schedule)
		if err != nil {
			return res, err
		}
		res.Of++
		switch {
		case out.Has(r.Kind) && setAside(mode, out):
			res.Starved++
		case out.Has(r.Kind):
			res.Reproduced++
		}
		for _, v := range out.Violations {
			res.Kinds[v.Kind]++
		}
	}
	return res, nil
}
