package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/embedded"
	"seckill/lab"
)

// errUnexpected makes `seckill lab` exit with status 1.
var errUnexpected = errors.New("lab: some verdicts are UNEXPECTED")

// errStarved makes `seckill lab` exit with status 3 (exitStarved) when some rows were STARVED
// and none UNEXPECTED: the machine, not a lock, left them undecided.
var errStarved = errors.New("lab: some verdicts are STARVED: the machine stalled; run those rows again on a quieter machine")

// exitStarved is the exit status of a lab run whose only undecided rows were STARVED.
const exitStarved = 3

// labFlags are the flags of `seckill lab`.
type labFlags struct {
	scenarios []string
	json      bool
	wide      bool
	details   bool
	noOutages bool
	verbose   bool
	lease     time.Duration
	history   string
}

func (l *labFlags) register(fs *flag.FlagSet) {
	fs.Func("scenario", fmt.Sprintf("run only this scenario (repeatable; default: all %d; a wrong name lists them)", len(lab.Names())),
		func(s string) error {
			if _, err := lab.Lookup(s); err != nil {
				return err
			}
			l.scenarios = append(l.scenarios, s)
			return nil
		})
	fs.BoolVar(&l.json, "json", false, "print the results as JSON instead of a table")
	fs.BoolVar(&l.wide, "wide", false, "print every column (source, expected, foreign unlocks, deadlock, stale, renewals)")
	fs.BoolVar(&l.details, "details", false, "after the table, print every check behind each verdict")
	fs.BoolVar(&l.noOutages, "no-outages", false, "skip the phases that stop a master (on Redis servers the lab starts itself)")
	fs.BoolVar(&l.verbose, "verbose", false, "log what the simulated instances log (crashes, lost locks) to stderr")
	fs.StringVar(&l.history, "history-dir", "", "where to write the drawing of a history that is not linearizable, created when missing (default: none is written)")
	fs.DurationVar(&l.lease, "lease", 300*time.Millisecond, "the lab's lease; every timing of a scenario is a multiple of it")
}

// quietRedisLog sends go-redis's own messages (refused dials while a master is stopped on
// purpose) to the debug log instead of stderr.
type quietRedisLog struct{ log *slog.Logger }

func (q quietRedisLog) Printf(ctx context.Context, format string, v ...any) {
	q.log.DebugContext(ctx, fmt.Sprintf(format, v...))
}

// runLab runs the scenario lab against the configured Redis servers, starting in-process ones
// where none answer (redis.embedded), and prints the table (or JSON) to stdout and a progress
// line per scenario to stderr.
func runLab(ctx context.Context, cfg config.Config, opt labFlags, stdout, stderr io.Writer) error {
	if opt.lease < 50*time.Millisecond || opt.lease > 10*time.Second {
		return fmt.Errorf("lab: --lease %s is out of range 50ms..10s", opt.lease)
	}
	log := app.NewLogger(stderr, cfg.Log.Level)
	redis.SetLogger(quietRedisLog{log})
	policy, why := cfg.EmbeddedPolicy()
	emb, err := embedded.Start(policy, why, cfg.Addresses(), cfg.Redis.Password, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer emb.Close()
	data := app.NewDataClient(cfg)
	defer data.Close()
	var masters []redis.UniversalClient
	for _, addr := range cfg.Redis.Masters {
		m := app.NewClient(cfg, addr, 0)
		defer m.Close()
		masters = append(masters, m)
	}
	where := "configured redis servers"
	if len(emb.Addrs) > 0 {
		where = "in-process redis (nothing answered) on " + strings.Join(emb.Addrs, ", ")
	}
	fmt.Fprintf(stderr, "lab: data %s, masters %s (%s), lease %s\n",
		app.DataName(cfg), strings.Join(cfg.Redis.Masters, ","), where, opt.lease)
	// Drawings only where asked: a command must not leave files behind that nobody removes.
	r := &lab.Runner{Data: data, Masters: masters, Lease: opt.lease, NoOutages: opt.noOutages,
		HistoryDir: opt.history, NoHistoryFiles: opt.history == "",
		Progress: func(p lab.Progress) {
			if p.Result == nil {
				fmt.Fprintf(stderr, "[%2d/%d] %-13s row %-2d %s ...\n", p.Index, p.Total, p.Scenario.Name, p.Scenario.Row, p.Scenario.Short)
				return
			}
			fmt.Fprintf(stderr, "[%2d/%d] %-13s %s in %.1fs\n", p.Index, p.Total, p.Scenario.Name, p.Result.Verdict, p.Result.DurationMs/1000)
		}}
	if opt.verbose {
		r.Log = log.With("component", "lab")
	}
	start := time.Now()
	results, err := r.RunAll(ctx, opt.scenarios)
	if err != nil {
		return err
	}
	starved := lab.CountStarved(results)
	fmt.Fprintf(stderr, "lab: %d scenarios in %.1fs, %d STARVED\n", len(results), time.Since(start).Seconds(), starved)
	if opt.json {
		err = lab.WriteJSON(stdout, results)
	} else if opt.wide {
		err = lab.WriteWideTable(stdout, results)
	} else {
		err = lab.WriteTable(stdout, results)
		if err == nil && opt.details {
			err = lab.WriteDetails(stdout, results)
		}
	}
	if err != nil {
		return err
	}
	switch {
	case lab.AnyUnexpected(results):
		return errUnexpected
	case starved > 0:
		return StatusError{Code: exitStarved, Err: errStarved}
	}
	return nil
}
