package main

import (
	"bytes"
	"context"
	"net/http"
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
	}{
		{"lua", "", "history: 40 answers from stock 10 of inventory001: linearizable\n"},
		{"none", "workMs=20", "from stock 10 of inventory001: NOT linearizable"},
	} {
		res, err := http.Post(f.HTTP.URL+"/inventory/reset?stock=10", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var out, errOut bytes.Buffer
		args := []string{"load", "--url", f.HTTP.URL, "--lock", c.lock, "--n", "40", "--c", "20", "--history-dir", t.TempDir()}
		if c.query != "" {
			args = append(args, "--query", c.query)
		}
		if err := run(context.Background(), args, noEnv, &out, &errOut); err != nil {
			t.Fatalf("%s: %v\n%s", c.lock, err, errOut.String())
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.lock, c.want, out.String())
		}
		if !strings.Contains(out.String(), "sold 10, soldout") && c.lock == "lua" {
			t.Errorf("lua should sell exactly the stock:\n%s", out.String())
		}
	}
}

func TestLoadRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"load", "--n", "0"},
		{"load", "--c", "1001"},
		{"load", "--url", "ftp://x"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, noEnv, &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
