package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"seckill/bench"
)

func TestBenchCommandJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"bench", "--duration", "300ms", "--warmup", "50ms", "--rounds", "1",
		"--concurrency", "1,2", "--modes", "atomic,lua", "--json"}, func(string) string { return "" }, &out, &errOut)
	if err != nil {
		t.Fatalf("seckill bench: %v\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
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
	for _, args := range [][]string{
		{"bench", "--concurrency", "0"},
		{"bench", "--concurrency", "a,b"},
		{"bench", "--modes", "nope", "--duration", "10ms"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestBenchCommandInstances: --instances spreads the buyers over that many instances, and each
// JSON cell says over how many.
func TestBenchCommandInstances(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"bench", "--duration", "300ms", "--warmup", "50ms", "--rounds", "1",
		"--concurrency", "4", "--instances", "1,2", "--modes", "lua,redislock-1ms", "--json"}, func(string) string { return "" }, &out, &errOut)
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
