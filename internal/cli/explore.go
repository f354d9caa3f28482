package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/explore"
	"seckill/internal/modes"
)

// errNotReproduced makes `seckill explore --replay` exit with status 1 when no run reproduced.
var errNotReproduced = errors.New("explore: the replay did not reproduce its violation")

// exploreFlags are the flags of `seckill explore`.
type exploreFlags struct {
	modes    []string
	budget   time.Duration
	shrink   time.Duration
	seed     uint64
	faults   []string
	lease    time.Duration
	dir      string
	json     bool
	wide     bool
	replay   string
	times    int
	embedded bool
}

func (e *exploreFlags) register(fs *flag.FlagSet) {
	fs.Func("modes", "comma-separated lock modes to explore (default "+strings.Join(explore.DefaultModes, ",")+")", func(s string) error {
		e.modes = nil
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if _, err := modes.LookupMode(f); err != nil {
				return err
			}
			e.modes = append(e.modes, f)
		}
		return nil
	})
	fs.DurationVar(&e.budget, "budget", 60*time.Second, "exploring time per mode (shrinking its smallest violation comes on top)")
	fs.DurationVar(&e.shrink, "shrink-budget", 0, "time to shrink each mode's smallest violation (default: half the budget, at least 20s)")
	fs.Uint64Var(&e.seed, "seed", uint64(time.Now().UnixNano()%1_000_000), "seed of the schedules: the same seed draws the same schedules for every mode (default: from the clock)")
	fs.Func("faults", "comma-separated faults to draw from (default all: "+strings.Join(explore.Catalogue, ",")+"; none: no fault)", func(s string) error {
		list, err := explore.ParseFaults(s)
		if err != nil {
			return err
		}
		e.faults = list
		if e.faults == nil {
			e.faults = []string{}
		}
		return nil
	})
	fs.DurationVar(&e.lease, "lease", explore.DefaultLease, "the lock lease; every time of a schedule is drawn as a multiple of it")
	fs.StringVar(&e.dir, "dir", "", "where to write each mode's replay file and timeline (default: $TMPDIR/seckill-explore)")
	fs.BoolVar(&e.json, "json", false, "print the report (or the replay's result) as JSON")
	fs.BoolVar(&e.wide, "wide", false, "print every column of the table, the faults drawn and the violations by fault included (about 300 columns)")
	fs.StringVar(&e.replay, "replay", "", "re-run the counterexample in this replay file instead of exploring")
	fs.IntVar(&e.times, "times", 10, "with --replay: how many times to re-run it")
	fs.BoolVar(&e.embedded, "embedded", false, "use in-process Redis servers even when redis-server is installed")
}

// runExplore explores the lock modes on Redis servers it starts itself, printing progress to
// stderr and the report to stdout; with --replay it re-runs one counterexample instead.
func runExplore(ctx context.Context, e exploreFlags, stdout, stderr io.Writer) error {
	if e.lease < 20*time.Millisecond || e.lease > 5*time.Second {
		return fmt.Errorf("explore: --lease %s is out of range 20ms..5s", e.lease)
	}
	if e.times < 1 || e.times > 1000 {
		return fmt.Errorf("explore: --times %d is out of range 1..1000", e.times)
	}
	if e.budget <= 0 {
		return fmt.Errorf("explore: --budget %s: want above 0", e.budget)
	}
	var replay explore.Replay
	if e.replay != "" {
		var err error
		if replay, err = explore.ReadReplay(e.replay); err != nil {
			return err
		}
	}
	// Stopped and restarted servers make go-redis log refused dials; they are the point here.
	redis.SetLogger(quietRedisLog{slog.New(slog.DiscardHandler)})
	fmt.Fprintln(stderr, "explore: starting Redis servers ...")
	rig, err := explore.NewRig(ctx, explore.RigOptions{Embedded: e.embedded})
	if err != nil {
		return err
	}
	defer rig.Close()
	if e.replay != "" {
		return runReplay(ctx, rig, replay, e, stdout, stderr)
	}
	opt := explore.Options{Modes: e.modes, Budget: e.budget, ShrinkBudget: e.shrink, Seed: e.seed, Faults: e.faults,
		Lease: e.lease, Dir: e.dir}
	if opt.Faults == nil {
		opt.Faults = explore.Catalogue
	}
	fmt.Fprintf(stderr, "explore: %s, seed %d, lease %s, %s per mode\n", rig.Backend, e.seed, e.lease, e.budget)
	for k, why := range rig.Undrawable(opt.Faults) {
		fmt.Fprintf(stderr, "explore: cannot draw %s: %s\n", k, why)
	}
	last := time.Time{}
	opt.Progress = func(p explore.Progress) {
		switch p.Phase {
		case "exploring":
			if time.Since(last) < 2*time.Second {
				return
			}
			last = time.Now()
			fmt.Fprintf(stderr, "  %-13s %4d trials, %4d violations, %3.0fs left\n", p.Mode, p.Trials, p.Violations, max(p.Left.Seconds(), 0))
		case "shrinking":
			fmt.Fprintf(stderr, "  %-13s %4d trials, %4d violations; shrinking the smallest ...\n", p.Mode, p.Trials, p.Violations)
		case "done":
			line := "no violation"
			if s := p.Result.Shortest; s != nil {
				line = fmt.Sprintf("shortest %s with %d buyers%s, faults [%s], failed %s re-runs",
					s.Kind, s.Buyers, s.LeaseNote(), strings.Join(s.Faults, "; "), s.Confirmed)
			}
			if p.Result.Starved > 0 {
				line += fmt.Sprintf("; %d STARVED", p.Result.Starved)
			}
			fmt.Fprintf(stderr, "%-13s done: %d trials, %d violations; %s\n", p.Mode, p.Trials, p.Violations, line)
		}
	}
	rep, err := explore.Explore(ctx, rig, opt)
	if err != nil {
		return err
	}
	switch {
	case e.json:
		return explore.WriteJSON(stdout, rep)
	case e.wide:
		return explore.WriteWideTable(stdout, rep)
	}
	return explore.WriteTable(stdout, rep)
}

// runReplay re-runs one counterexample --times times.
func runReplay(ctx context.Context, rig *explore.Rig, r explore.Replay, e exploreFlags, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "explore: replaying %s (%s, %s: %d buyers, faults [%s]) %d times on %s\n", e.replay, r.Mode, r.Kind,
		len(r.Schedule.Buyers), strings.Join(r.Faults, "; "), e.times, rig.Backend)
	res, err := explore.RunReplay(ctx, rig, r, e.times)
	if err != nil {
		return err
	}
	if e.json {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
	} else {
		starved := ""
		if res.Starved > 0 {
			starved = fmt.Sprintf(" (%d more STARVED: shown while the machine stalled, not counted)", res.Starved)
		}
		fmt.Fprintf(stdout, "%s: %s reproduced in %d of %d runs%s\n", r.Mode, r.Kind, res.Reproduced, res.Of, starved)
	}
	if res.Reproduced == 0 {
		return errNotReproduced
	}
	return nil
}
