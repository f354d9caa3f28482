package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"seckill/simulate"
)

// errSimulateReplay makes `seckill simulate --replay` exit with status 1 when a replay did not
// give the file's trace.
var errSimulateReplay = errors.New("simulate: the replay did not give the file's trace")

// simulateFlags are the flags of `seckill simulate`.
type simulateFlags struct {
	kinds      []string
	clients    int
	perProcess int
	rounds     int
	faults     []string
	maxFaults  int
	exhaustive bool
	seed       uint64
	runs       int
	budget     time.Duration
	dir        string
	json       bool
	replay     string
	times      int
}

func (f *simulateFlags) register(fs *flag.FlagSet) {
	f.kinds = []string{"lua"}
	fs.Func("kinds", "comma-separated kinds to simulate (default lua; known: "+strings.Join(simulate.KindNames(), ",")+")", func(s string) error {
		f.kinds = nil
		for _, k := range strings.Split(s, ",") {
			if k = strings.TrimSpace(k); k != "" {
				f.kinds = append(f.kinds, k)
			}
		}
		return nil
	})
	fs.IntVar(&f.clients, "clients", 2, "simulated clients, --per-process of them to a process")
	fs.IntVar(&f.perProcess, "per-process", 1, "clients per process (more than 1 for "+strings.Join(simulate.SharedKinds, ", ")+"; fair up to 3): they share its queue and subscription (and for lua and fenced its line; fair: its heartbeat), as one Locker's waiters do")
	fs.IntVar(&f.rounds, "rounds", 1, "acquisitions (acquire, work, write, release) per client")
	fs.Func("faults", "comma-separated faults the scheduler may inject (default none; known: "+strings.Join(simulate.AllFaults, ",")+")", func(s string) error {
		f.faults = nil
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" && x != "none" {
				f.faults = append(f.faults, x)
			}
		}
		return nil
	})
	fs.IntVar(&f.maxFaults, "max-faults", 1, "at most this many faults in one schedule")
	fs.BoolVar(&f.exhaustive, "exhaustive", false, "explore every schedule within the bounds (state hashing)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random schedules (without --exhaustive)")
	fs.IntVar(&f.runs, "runs", 0, "runs of the random search per kind, the same on every machine (0: as many as --budget allows)")
	fs.DurationVar(&f.budget, "budget", 10*time.Second, "wall time of the random search per kind, without --runs (the schedules never depend on it)")
	fs.StringVar(&f.dir, "dir", "artifacts/simulate", "where each kind's shortest counterexample is written (.json to replay, .html to read)")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.StringVar(&f.replay, "replay", "", "replay a counterexample file instead of searching")
	fs.IntVar(&f.times, "times", 10, "how many times --replay runs it")
}

// runSimulate searches each kind, or replays a file. An interrupt (ctx) stops the search in
// progress: what was searched is reported, and the command fails saying so.
func runSimulate(ctx context.Context, opts simulateFlags, stdout io.Writer) error {
	if opts.times < 1 {
		return fmt.Errorf("simulate: --times %d: want at least 1", opts.times)
	}
	if opts.budget <= 0 && !opts.exhaustive && opts.replay == "" {
		return fmt.Errorf("simulate: --budget %s: want a positive duration", opts.budget)
	}
	if opts.runs < 0 {
		return fmt.Errorf("simulate: --runs %d: want 0 (as many as --budget allows) or more", opts.runs)
	}
	if opts.clients < 1 || opts.perProcess < 1 || opts.maxFaults < 0 || opts.rounds < 1 {
		return fmt.Errorf("simulate: --clients %d, --per-process %d, --rounds %d, --max-faults %d: want >= 1, >= 1, >= 1 and >= 0",
			opts.clients, opts.perProcess, opts.rounds, opts.maxFaults)
	}
	if opts.replay != "" {
		return replaySimulation(opts, stdout)
	}
	var reports []simulate.KindReport
	for _, k := range opts.kinds {
		cfg := simulate.Config{Kind: k, Clients: opts.clients, PerProcess: opts.perProcess, Rounds: opts.rounds, Faults: opts.faults, MaxFaults: opts.maxFaults}
		if len(opts.faults) == 0 {
			cfg.MaxFaults = 0
		}
		rep, err := simulate.Search{Config: cfg, Exhaustive: opts.exhaustive, Seed: opts.seed, Runs: opts.runs, Budget: opts.budget, Dir: opts.dir}.Run(ctx)
		if err != nil {
			return fmt.Errorf("simulate %s: %w", k, err)
		}
		reports = append(reports, rep)
		if !opts.json {
			printSimulation(stdout, rep)
			if !rep.Exhaustive && !rep.Interrupted {
				fmt.Fprintf(stdout, "  again: %s\n", simulateAgain(cfg, rep))
			}
		}
		if rep.Interrupted {
			break
		}
	}
	if opts.json {
		if err := writeJSON(stdout, map[string]any{"kinds": reports}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("simulate: interrupted, the report covers what was searched: %w", err)
	}
	return nil
}

// simulateAgain is the command that runs a random search again, run for run.
func simulateAgain(cfg simulate.Config, r simulate.KindReport) string {
	cmd := fmt.Sprintf("go run . simulate --kinds %s --clients %d --rounds %d", r.Kind, cfg.Clients, cfg.Rounds)
	if cfg.PerProcess > 1 {
		cmd += fmt.Sprintf(" --per-process %d", cfg.PerProcess)
	}
	if len(cfg.Faults) > 0 {
		cmd += fmt.Sprintf(" --faults %s --max-faults %d", strings.Join(cfg.Faults, ","), cfg.MaxFaults)
	}
	return cmd + fmt.Sprintf(" --seed %d --runs %d", r.Seed, r.Runs)
}

func printSimulation(w io.Writer, r simulate.KindReport) {
	how := fmt.Sprintf("random, seed %d", r.Seed)
	if r.Exhaustive {
		how = fmt.Sprintf("exhaustive, %d states", r.States)
		if r.Truncated > 0 {
			how += fmt.Sprintf(", %d runs cut at the step bound", r.Truncated)
		}
		if r.Interrupted {
			how += ", interrupted"
		}
	}
	fmt.Fprintf(w, "%-13s %7d schedules (%s) in %d ms: %d violations\n", r.Kind, r.Schedules, how, r.ElapsedMs, r.Violations)
	if s := r.Shortest; s != nil {
		fmt.Fprintf(w, "  shortest: %d steps, %s\n  replay: %s\n", s.Steps, s.Violation, r.ReplayFile)
	}
}

func replaySimulation(opts simulateFlags, stdout io.Writer) error {
	f, err := simulate.ReadReplayFile(opts.replay)
	if err != nil {
		return err
	}
	out, err := f.Replay(opts.times)
	if err != nil {
		return err
	}
	if opts.json {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "reproduced %d of %d, identical traces: %v (%s)\n", out.Reproduced, out.Of, out.Identical, out.Violation)
	}
	if !out.Identical || out.Reproduced != out.Of {
		return errSimulateReplay
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("simulate: encode the report: %w", err)
	}
	return nil
}
