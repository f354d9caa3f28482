package simulate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ReplayFile is a counterexample as written to disk: the bounds, the scheduler's choices and the
// trace they give. Replaying runs the choices again on a fresh simulator.
type ReplayFile struct {
	Kind      string   `json:"kind"`
	Clients   int      `json:"clients"`
	Rounds    int      `json:"rounds"`
	Faults    []string `json:"faults"`
	MaxFaults int      `json:"maxFaults"`
	Seed      uint64   `json:"seed,omitempty"`
	Choices   []int    `json:"choices"`
	Steps     int      `json:"steps"`
	Violation string   `json:"violation"`
	TraceHash string   `json:"traceHash"`
	Trace     []Step   `json:"trace"`

	PerProcess int `json:"perProcess,omitempty"` // Config.PerProcess when more than 1
}

// Step is one line of a trace, for the page.
type Step struct {
	At    int64  `json:"at"`
	Who   string `json:"who"`
	What  string `json:"what"`
	Reply string `json:"reply"`
	Lock  string `json:"lock"` // the lock key's value on each master after the step
}

// Steps lists the trace's steps.
func (w *World) Steps() []Step {
	var out []Step
	for n := w.trace; n != nil; n = n.prev {
		out = append(out, Step{At: n.at, Who: n.who, What: n.what, Reply: n.reply, Lock: n.locks})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// NewReplayFile describes the run f found under cfg.
func NewReplayFile(cfg Config, f *Found) ReplayFile {
	cfg = cfg.Defaults()
	r := ReplayFile{Kind: cfg.Kind, Clients: cfg.Clients, Rounds: cfg.Rounds, Faults: append([]string{}, cfg.Faults...),
		MaxFaults: cfg.MaxFaults, Seed: f.Seed, Choices: f.Choices, Steps: f.Steps, Violation: f.Violation,
		TraceHash: f.World.TraceHash(), Trace: f.World.Steps()}
	if cfg.PerProcess > 1 {
		r.PerProcess = cfg.PerProcess
	}
	return r
}

// Config is the simulator configuration the file was made with.
func (r ReplayFile) Config() Config {
	return Config{Kind: r.Kind, Clients: r.Clients, PerProcess: r.PerProcess, Rounds: r.Rounds, Faults: r.Faults, MaxFaults: r.MaxFaults}
}

// Write saves the file as <dir>/<name>.json and its page as <dir>/<name>.html; it returns the
// JSON's path.
func (r ReplayFile) Write(dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("simulate: replay dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("simulate: encode replay: %w", err)
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("simulate: write replay: %w", err)
	}
	var page strings.Builder
	if err := writePage(&page, r); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".html"), []byte(page.String()), 0o644); err != nil {
		return "", fmt.Errorf("simulate: write page: %w", err)
	}
	return path, nil
}

// ReadReplayFile loads a replay file.
func ReadReplayFile(path string) (ReplayFile, error) {
	var r ReplayFile
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("simulate: read replay: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("simulate: replay %s: %w", path, err)
	}
	return r, nil
}

// ReplayOutcome is what replaying a file n times gave.
type ReplayOutcome struct {
	Reproduced int    `json:"reproduced"`
	Of         int    `json:"of"`
	Identical  bool   `json:"identical"`
	TraceHash  string `json:"traceHash"`
	Violation  string `json:"violation"`
	ElapsedMs  int64  `json:"elapsedMs"`
}

// Replay runs r's choices times times, each on a fresh simulator: reproduced counts the runs
// that ended in the file's violation, identical says every run's trace hash was the file's.
func (r ReplayFile) Replay(times int) (ReplayOutcome, error) {
	start := time.Now()
	out := ReplayOutcome{Of: times, Identical: true, TraceHash: r.TraceHash, Violation: r.Violation}
	for range times {
		s, err := New(r.Config())
		if err != nil {
			return out, err
		}
		w, err := s.Replay(r.Choices)
		if err != nil {
			return out, err
		}
		if w.TraceHash() != r.TraceHash {
			out.Identical = false
		}
		if w.Violation != "" && w.Violation == r.Violation {
			out.Reproduced++
		}
	}
	out.ElapsedMs = time.Since(start).Milliseconds()
	return out, nil
}
