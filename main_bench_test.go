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
