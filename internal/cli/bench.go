package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/bench"
	"seckill/internal/benchreport"
	"seckill/internal/redisproc"
)

// benchFlags are the flags of `seckill bench`.
type benchFlags struct {
	opt        bench.Options
	json       bool
	html       string
	from       string
	url        string
	adminToken string
	reportOnly bool
	clientCost bool
	primitives bool
}

// errTargetsFailed makes `seckill bench` exit 1 when a target of the run FAILs, unless
// --report-only.
var errTargetsFailed = errors.New("bench: some targets FAIL")

func (b *benchFlags) register(fs *flag.FlagSet) {
	b.opt.Concurrency = bench.DefaultConcurrency
	fs.DurationVar(&b.opt.Duration, "duration", bench.DefaultDuration, "measured time of each cell (strategy × buyers)")
	fs.DurationVar(&b.opt.Warmup, "warmup", bench.DefaultWarmup, "unmeasured warm-up before each round of a cell")
	fs.IntVar(&b.opt.Rounds, "rounds", bench.DefaultRounds, "rounds per cell, run up and down the crowd sizes (--duration is split among them)")
	fs.DurationVar(&b.opt.Lease, "lease", bench.DefaultLease, "lock lease of the lock modes")
	fs.DurationVar(&b.opt.Wait, "wait", bench.DefaultWait, "how long a buyer waits for a lock")
	fs.Func("concurrency", "comma-separated crowd sizes, buyers at once on one key (default 1,8,50)", func(s string) error {
		var list []int
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 10_000 {
				return fmt.Errorf("concurrency %q: want integers in 1..10000", f)
			}
			list = append(list, n)
		}
		b.opt.Concurrency = list
		return nil
	})
	fs.Func("instances", "comma-separated counts of service instances to spread the buyers over, each with its own clients, locks and subscriptions (default 1)", func(s string) error {
		var list []int
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 256 {
				return fmt.Errorf("instances %q: want integers in 1..256", f)
			}
			list = append(list, n)
		}
		b.opt.Instances = list
		return nil
	})
	fs.Func("modes", "comma-separated strategies to run (default all: "+strings.Join(bench.Names(), ",")+")", func(s string) error {
		b.opt.Strategies = nil
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				b.opt.Strategies = append(b.opt.Strategies, f)
			}
		}
		return nil
	})
	fs.StringVar(&b.from, "from", "", "run nothing: print (and with --html draw) the report in this JSON file, written by --json or kept as the last run")
	fs.StringVar(&b.url, "url", "", "bench over HTTP: fire the sales at this running service (nginx in front of several instances) instead of starting Redis; --modes lists lock modes (default lua,fair)")
	fs.StringVar(&b.adminToken, "admin-token", "", "with --url: sent as X-Admin-Token with the stock reset")
	fs.BoolVar(&b.json, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&b.html, "html", "", "also draw the report as a self-contained HTML page in this file (sales/s against the peers, each mode's waits as a CDF, sales per buyer); a bare name goes into $TMPDIR/seckill-bench")
	fs.BoolVar(&b.reportOnly, "report-only", false, "exit 0 even when a target FAILs (by default a FAIL target makes the run exit 1)")
	fs.BoolVar(&b.clientCost, "client-cost", false, "run nothing else: the client's CPU, allocations, commands and goroutines per sale of the lua and fenced locks against redislock, 16 Lockers × 4 buyers on one key in this process (--rounds rounds of --duration each, names alternated)")
	fs.BoolVar(&b.primitives, "primitives", false, fmt.Sprintf("run nothing else: the read-write lock (reads/s of %d instances × %d readers, in a closed loop and resting %s before each read, "+
		"while one writer writes, resting %s before each write) and both semaphores (permits/s, %d permits shared by %d instances × %d buyers), "+
		"on one key of one Redis, each hold checked; a hold that overlaps one it excludes fails the run (--rounds rounds, --duration in all per line)",
		bench.PrimInstances, bench.PrimBuyers, bench.ReaderRest, bench.WriterPause, bench.PrimPermits, bench.PrimInstances, bench.PrimBuyers))
	fs.BoolVar(&b.opt.Embedded, "embedded", false, "use in-process Redis servers even when redis-server is installed")
}

// runBench runs the handoff benchmark on Redis servers it starts itself and prints the table (or
// JSON) to stdout and a progress line per cell to stderr.
//
// The report is also drawn to --html FILE, and kept as the last run (benchreport.LastRunPath), which
// the dashboard's /bench page draws.
func runBench(ctx context.Context, b benchFlags, getenv func(string) string, stdout, stderr io.Writer) error {
	if b.html != "" {
		var err error
		if b.html, err = htmlPath(b.html, os.TempDir()); err != nil {
			return err
		}
		// Refused before minutes of measuring, not after.
		if st, err := os.Stat(filepath.Dir(b.html)); err != nil || !st.IsDir() {
			return fmt.Errorf("bench: --html %s: its directory %s does not exist", b.html, filepath.Dir(b.html))
		}
	}
	if b.from != "" {
		rep, err := benchreport.LoadRun(b.from)
		if err != nil {
			return fmt.Errorf("bench: --from: %w", err)
		}
		b.from = "" // not kept again as the last run
		// a report read back is looked at, not judged again: its FAIL targets exit 0
		b.reportOnly = true
		return writeBench(rep, b, func(string) string { return "" }, stdout, stderr)
	}
	// go-redis's own notes (a connection closed under a hook as the clients close) are not figures.
	redis.SetLogger(quietRedisLog{slog.New(slog.DiscardHandler)})
	if b.clientCost {
		return runClientCost(ctx, b, stdout)
	}
	opt := b.opt
	opt.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if b.primitives {
		return runPrimitives(ctx, opt, stdout)
	}
	fmt.Fprintf(stderr, "bench: about %s (%d crowd sizes × %d instance counts; per cell %s measured in %d rounds, each after %s of warm-up)\n",
		opt.Estimate().Round(time.Second), len(opt.Concurrency), max(len(opt.Instances), 1), opt.Duration, opt.Rounds, opt.Warmup)
	opt.Progress = func(done, total int, c bench.Cell) {
		fmt.Fprintf(stderr, "[%2d/%d] %-16s %3d inst %3d buyers %8.0f sales/s  p99 %8.2f ms  Jain %.3f  starved %d\n",
			done, total, c.Strategy, c.Instances, c.Buyers, c.Rate, c.P99Ms, c.Jain, c.Starved)
	}
	opt.RoundDone = func(r, rounds int) {
		fmt.Fprintf(stderr, "bench: round %d of %d done (each round visits every cell; the cells follow the last)\n", r, rounds)
	}
	if b.url != "" {
		rep, err := bench.RunHTTP(ctx, opt, b.url, b.adminToken)
		if err != nil {
			return err
		}
		return writeBench(rep, b, getenv, stdout, stderr)
	}
	rep, err := bench.Run(ctx, opt)
	if err != nil {
		return err
	}
	return writeBench(rep, b, getenv, stdout, stderr)
}

// writeBench prints the report, draws it to --html and keeps it as the last run.
func writeBench(rep bench.Report, b benchFlags, getenv func(string) string, stdout, stderr io.Writer) error {
	if err := bench.Write(stdout, rep, b.json); err != nil {
		return err
	}
	if b.html != "" {
		f, err := os.Create(b.html)
		if err != nil {
			return fmt.Errorf("bench: --html: %w", err)
		}
		err = benchreport.WriteHTML(f, rep)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("bench: --html %s: %w", b.html, err)
		}
		fmt.Fprintf(stderr, "bench: drawn to %s (open it in a browser; it loads nothing from the network)\n", b.html)
	}
	if p := benchreport.LastRunPath(getenv); p != "" {
		if err := benchreport.KeepLastRun(p, rep); err != nil {
			fmt.Fprintf(stderr, "bench: %v (the dashboard's /bench page shows the run before)\n", err)
		} else {
			fmt.Fprintf(stderr, "bench: kept as the last run in %s (the dashboard draws it at /bench)\n", p)
		}
	}
	if b.reportOnly {
		return nil
	}
	return failedTargets(rep)
}

// failedTargets is errTargetsFailed, naming them, when some target of rep FAILs.
func failedTargets(rep bench.Report) error {
	var failed []string
	for _, t := range rep.Targets {
		if !t.Pass {
			failed = append(failed, t.Name)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (--report-only exits 0)", errTargetsFailed, strings.Join(failed, "; "))
}

// htmlPath is where --html NAME draws: a bare file name goes into tmp/seckill-bench (made when
// missing), so a run never writes into the directory it was started from (the repository) unless
// told so ("./bench.html"); any other path is written where it says.
func htmlPath(name, tmp string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || filepath.Dir(name) != "." {
		return name, nil
	}
	dir := filepath.Join(tmp, "seckill-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: --html: %w", err)
	}
	return filepath.Join(dir, name), nil
}

// runClientCost prints what each way of locking costs the process that uses it, per sale.
func runClientCost(ctx context.Context, b benchFlags, stdout io.Writer) error {
	costs, server, err := bench.RunClientCost(ctx, b.opt.Rounds, b.opt.Duration, b.opt.Embedded)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "client cost per sale: %d Lockers × %d buyers on one key of one %s, one process; medians of %d rounds of %s\n",
		bench.CostLockers, bench.CostBuyers, server, max(b.opt.Rounds, 1), b.opt.Duration)
	if server != redisproc.KindReal {
		fmt.Fprintln(stdout, "the Redis runs in this process: its CPU, allocations and goroutines count as the client's; install redis-server for the client's own")
	}
	fmt.Fprintf(stdout, "%-16s %10s %12s %10s %10s %22s\n", "LOCK", "SALES/S", "CPU µs/SALE", "ALLOCS", "CMDS", "GOROUTINES/LOCKER")
	for _, c := range costs {
		fmt.Fprintf(stdout, "%-16s %10.0f %12.1f %10.1f %10.2f %22.2f\n", c.Name, c.PerSec, c.CPUus, c.Allocs, c.Cmds, c.Routine)
	}
	ts := bench.CostTargets(costs, server)
	if len(ts) == 0 {
		return nil
	}
	fmt.Fprintln(stdout, "\ntargets, all from this run:")
	if err := benchreport.WriteTargets(stdout, ts); err != nil || b.reportOnly {
		return err
	}
	return failedTargets(benchreport.Report{Targets: ts})
}

// runPrimitives prints the read-write lock's and the semaphores' lines; a violation seen is an
// error (exit 1), after the table.
func runPrimitives(ctx context.Context, opt bench.Options, stdout io.Writer) error {
	ps, err := bench.RunPrimitives(ctx, opt)
	if err != nil {
		return err
	}
	if err := bench.WritePrimitives(stdout, ps, opt); err != nil {
		return err
	}
	return bench.Violations(ps)
}
