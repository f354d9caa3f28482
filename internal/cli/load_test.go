package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill/internal/apptest"
)

// TestLoadChecksTheHistory: `seckill load` against a running service says linearizable for a
// safe mode and NOT linearizable for mode none with a business time (its lost updates).
func TestLoadChecksTheHistory(t *testing.T) {
	f := apptest.New(t, nil)
	for _, c := range []struct {
		lock, query string
		want        string
		wantErr     error
	}{
		{"lua", "", "history: 40 answers from stock 10 of inventory001: linearizable\n", nil},
		{"none", "workMs=20", "from stock 10 of inventory001: NOT linearizable", errNotLinearizable},
	} {
		var out, errOut bytes.Buffer
		// --stock restocks first: the run does not depend on what an earlier one left.
		dir := t.TempDir()
		args := []string{"load", "--url", f.HTTP.URL, "--lock", c.lock, "--n", "40", "--c", "20", "--stock", "10", "--history-dir", dir}
		if c.query != "" {
			args = append(args, "--query", c.query)
		}
		if err := Run(context.Background(), args, noEnv, &out, &errOut); !errors.Is(err, c.wantErr) {
			t.Fatalf("%s: %v, want %v\n%s", c.lock, err, c.wantErr, errOut.String())
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.lock, c.want, out.String())
		}
		if !strings.Contains(out.String(), "sold 10, soldout") && c.lock == "lua" {
			t.Errorf("lua should sell exactly the stock:\n%s", out.String())
		}
		if c.wantErr != nil {
			loadPageSaysWhatRan(t, dir, out.String(), f.HTTP.URL)
		}
	}
}

// loadPageSaysWhatRan: the drawing of a load run's violation is in dir, where the output says,
// and its header names the run (sales, service, SKU, lock mode), not an empty scenario's
// ("row 0 … (row 0 of docs/lab.md, ), lock mode :").
func loadPageSaysWhatRan(t *testing.T, dir, out, service string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "seckill-history-load-none-*.html"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one drawing of the load run in --history-dir, got %v (%v)", files, err)
	}
	if !strings.Contains(out, "history: visualisation in "+files[0]) {
		t.Errorf("the output does not say where the drawing is (%s):\n%s", files[0], out)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<title>seckill load:", "<b>Load run</b> 40 sales, 20 at a time, on inventory001 through " + service,
		"from stock 10", "workMs=20", "lock mode <code>none</code>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the load run's history page lacks %q", want)
		}
	}
	for _, bad := range []string{"row 0", "docs/lab.md", ", )", "<code></code>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the load run's history page has %q, an empty scenario's header", bad)
		}
	}
}

// TestLabAndLoadLeaveNoFiles: without --history-dir neither `seckill lab` nor `seckill load`
// writes a drawing (they used to leave one seckill-history-*.html per violation in the temp
// dir, for good); both still give the verdict and say how to keep the drawing.
func TestLabAndLoadLeaveNoFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.TempDir, where the drawings went
	f := apptest.New(t, nil)
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"load", "--url", f.HTTP.URL, "--lock", "none", "--query", "workMs=20",
		"--n", "40", "--c", "20", "--stock", "10"}, noEnv, &out, &errOut)
	if !errors.Is(err, errNotLinearizable) {
		t.Fatalf("load --lock none: %v, want %v\n%s%s", err, errNotLinearizable, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "NOT linearizable") || !strings.Contains(out.String(), "--history-dir DIR writes its drawing") {
		t.Errorf("load must give the verdict and say how to keep the drawing:\n%s", out.String())
	}
	out.Reset()
	if err := Run(context.Background(), []string{"lab", "--scenario", "none", "--details"}, labEnv(t), &out, &errOut); err != nil {
		t.Fatalf("seckill lab: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "NOT linearizable") || !strings.Contains(out.String(), "--history-dir DIR keeps it") {
		t.Errorf("lab must give the verdict and say how to keep the drawing:\n%s", out.String())
	}
	left, err := filepath.Glob(filepath.Join(tmp, "seckill-history-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("lab and load left %d drawings nobody asked for in the temp dir: %v", len(left), left)
	}
}

// TestLoadSaysSoldOut: with nothing left to sell and no --stock, load says so instead of firing.
func TestLoadSaysSoldOut(t *testing.T) {
	f := apptest.New(t, nil)
	res, err := http.Post(f.HTTP.URL+"/inventory/restock?stock=0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var out, errOut bytes.Buffer
	err = Run(context.Background(), []string{"load", "--url", f.HTTP.URL, "--n", "5"}, noEnv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "sold out") || !strings.Contains(err.Error(), "--stock") {
		t.Fatalf("load on a sold-out SKU: %v, want a sold-out error naming --stock", err)
	}
}

func TestLoadRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"load", "--n", "0"},
		{"load", "--c", "1001"},
		{"load", "--url", "ftp://x"},
	} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, noEnv, &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
