package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/bench"
	"seckill/internal/benchreport"
)

func TestBenchCommandJSON(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"bench", "--duration", "300ms", "--warmup", "50ms", "--rounds", "1",
		"--concurrency", "1,2", "--modes", "atomic,lua", "--json"}, func(string) string { return "" }, &out, &errOut)
	if err != nil && !errors.Is(err, errTargetsFailed) {
		t.Fatalf("seckill bench: %v\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	// the exit status follows the targets: an error exactly when one FAILs
	if failed := failedTargets(rep); (err != nil) != (failed != nil) {
		t.Errorf("bench returned %v with targets %+v", err, rep.Targets)
	}
	if len(rep.Cells) != 4 || rep.Cells[0].Strategy != "lua" || rep.Cells[3].Strategy != "atomic" || rep.Cells[3].Buyers != 2 {
		t.Fatalf("want lua then atomic at 1 and 2 buyers, got %+v", rep.Cells)
	}
	for _, c := range rep.Cells {
		if c.Sales == 0 || c.CommandsPerSale < 1 {
			t.Errorf("%s × %d: %d sales, %.2f commands per sale (on %s)", c.Strategy, c.Buyers, c.Sales, c.CommandsPerSale, rep.Redis.Kind)
		}
	}
	if !strings.Contains(errOut.String(), "4/4] atomic") {
		t.Errorf("progress on stderr lacks the last cell:\n%s", errOut.String())
	}
}

func TestBenchCommandRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "--concurrency", "0"},
		{"bench", "--concurrency", "a,b"},
		{"bench", "--modes", "nope", "--duration", "10ms"},
	} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, func(string) string { return "" }, &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestBenchCommandInstances: --instances spreads the buyers over that many instances, and each
// JSON cell says over how many.
func TestBenchCommandInstances(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"bench", "--duration", "300ms", "--warmup", "50ms", "--rounds", "1",
		"--concurrency", "4", "--instances", "1,2", "--modes", "lua,redislock-1ms", "--json", "--report-only"}, func(string) string { return "" }, &out, &errOut)
	if err != nil {
		t.Fatalf("seckill bench: %v\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("%d cells, want 2 strategies × 2 instance counts", len(rep.Cells))
	}
	for i, c := range rep.Cells {
		if want := []int{1, 2}[i%2]; c.Instances != want || c.Sales == 0 {
			t.Errorf("cell %d: %s on %d instances sold %d, want %d instances", i, c.Strategy, c.Instances, c.Sales, want)
		}
		if c.Instances == 2 && len(c.InstanceP50Ms) != 2 {
			t.Errorf("%s on 2 instances: per-instance waits %v", c.Strategy, c.InstanceP50Ms)
		}
	}
}

// TestBenchCommandHTML: --html draws the run to a file, and the run is kept where the
// dashboard's /bench reads it; a --html whose directory is missing is refused before the run.
func TestBenchCommandHTML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(k string) string {
		if k == "XDG_CACHE_HOME" {
			return filepath.Join(dir, "cache")
		}
		return ""
	}
	var out, errOut bytes.Buffer
	page := filepath.Join(dir, "bench.html")
	err := Run(context.Background(), []string{"bench", "--duration", "300ms", "--warmup", "50ms", "--rounds", "1",
		"--concurrency", "2", "--modes", "lua", "--html", page}, env, &out, &errOut)
	if err != nil {
		t.Fatalf("seckill bench --html: %v\n%s", err, errOut.String())
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), `class="cdf-line" data-strategy="lua"`) || !strings.Contains(string(b), `class="buyer-area"`) {
		t.Errorf("the page (%v):\n%.500s", err, b)
	}
	if rep, err := benchreport.LoadRun(benchreport.LastRunPath(env)); err != nil || len(rep.Cells) != 1 {
		t.Errorf("the kept run: %v, %+v", err, rep.Cells)
	}
	if !strings.Contains(errOut.String(), "drawn to "+page) {
		t.Errorf("stderr does not say where the page is:\n%s", errOut.String())
	}

	start := time.Now()
	err = Run(context.Background(), []string{"bench", "--html", filepath.Join(dir, "missing", "b.html")}, env, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || time.Since(start) > 5*time.Second {
		t.Errorf("--html into a missing directory: %v after %s", err, time.Since(start))
	}
}

// TestBenchHTMLBareNameGoesToTemp: --html NAME never writes into the directory the run was
// started from (the repository); a path with a directory is kept as given.
func TestBenchHTMLBareNameGoesToTemp(t *testing.T) {
	tmp := t.TempDir()
	got, err := htmlPath("bench.html", tmp)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tmp, "seckill-bench", "bench.html"); got != want {
		t.Errorf("htmlPath(bench.html) = %s, want %s", got, want)
	}
	if st, err := os.Stat(filepath.Dir(got)); err != nil || !st.IsDir() {
		t.Errorf("its directory was not made: %v", err)
	}
	for _, p := range []string{"./bench.html", filepath.Join(tmp, "x", "b.html")} {
		if got, err := htmlPath(p, tmp); err != nil || got != p {
			t.Errorf("htmlPath(%s) = %s, %v; want it as given", p, got, err)
		}
	}
}

// TestBenchFailTargetExitsNonZero: a FAIL target is an error (exit 1) naming it, a run whose
// targets all pass is not.
func TestBenchFailTargetExitsNonZero(t *testing.T) {
	rep := bench.Report{Targets: []benchreport.Target{{Name: "lua ÷ redsync sales/s at 50", Pass: true},
		{Name: "fair p99 at 50", Pass: false}}}
	err := failedTargets(rep)
	if !errors.Is(err, errTargetsFailed) || !strings.Contains(err.Error(), "fair p99 at 50") ||
		strings.Contains(err.Error(), "lua ÷") {
		t.Errorf("failedTargets = %v; want errTargetsFailed naming the failed target only", err)
	}
	rep.Targets[1].Pass = true
	if err := failedTargets(rep); err != nil {
		t.Errorf("all targets pass: %v", err)
	}
}

// TestBenchCommandPrimitives: --primitives runs nothing else and prints the read-write lock's
// lines and a line for each semaphore, with no violation; `help bench` names it.
func TestBenchCommandPrimitives(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"bench", "--primitives", "--duration", "300ms", "--warmup", "50ms", "--rounds", "1",
		"--wait", "1s"}, func(string) string { return "" }, &out, &errOut)
	if err != nil {
		t.Fatalf("seckill bench --primitives: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, s := range []string{"most inside", "violations", "readwrite", "readwrite-rest", "semaphore", "expirable"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "strategy") {
		t.Errorf("--primitives ran the lock modes too:\n%s", out.String())
	}
	out.Reset()
	if err := Run(context.Background(), []string{"help", "bench"}, func(string) string { return "" }, &out, &errOut); err != nil ||
		!strings.Contains(out.String(), "-primitives") {
		t.Errorf("help bench (%v) lacks --primitives:\n%s", err, out.String())
	}
}
