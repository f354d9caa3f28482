package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

// The simulator's report as --json prints it, the fields a reader relies on.
type simulateJSON struct {
	Kinds []struct {
		Kind       string `json:"kind"`
		Schedules  int    `json:"schedules"`
		Exhaustive bool   `json:"exhaustive"`
		Violations int    `json:"violations"`
		Shortest   *struct {
			Kind      string   `json:"kind"`
			Clients   int      `json:"clients"`
			Faults    []string `json:"faults"`
			Steps     int      `json:"steps"`
			TraceHash string   `json:"traceHash"`
		} `json:"shortest"`
		ReplayFile string `json:"replayFile"`
	} `json:"kinds"`
}

func TestSimulateCommandJSONAndReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noEnv := func(string) string { return "" }
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"simulate", "--kinds", "setnx-expire,fenced", "--clients", "2", "--faults", "crash",
		"--exhaustive", "--dir", dir, "--json"}, noEnv, &out, &errOut)
	if err != nil {
		t.Fatalf("seckill simulate: %v\n%s", err, errOut.String())
	}
	var rep simulateJSON
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(rep.Kinds) != 2 {
		t.Fatalf("%d kinds: %s", len(rep.Kinds), out.String())
	}
	broken, fenced := rep.Kinds[0], rep.Kinds[1]
	if broken.Kind != "setnx-expire" || !broken.Exhaustive || broken.Violations == 0 || broken.Shortest == nil ||
		broken.Shortest.Steps == 0 || broken.Shortest.Clients != 2 || broken.ReplayFile == "" {
		t.Fatalf("setnx-expire: %+v", broken)
	}
	if fenced.Kind != "fenced" || fenced.Violations != 0 || fenced.Shortest != nil || fenced.Schedules == 0 {
		t.Fatalf("fenced: %+v", fenced)
	}
	out.Reset()
	err = Run(context.Background(), []string{"simulate", "--replay", broken.ReplayFile, "--times", "3", "--json"}, noEnv, &out, &errOut)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut.String())
	}
	var rr struct {
		Reproduced, Of int
		Identical      bool
	}
	if err := json.Unmarshal(out.Bytes(), &rr); err != nil || rr.Reproduced != 3 || rr.Of != 3 || !rr.Identical {
		t.Fatalf("replay: %+v %v\n%s", rr, err, out.String())
	}
}

// Bad flags are refused before anything runs, and an interrupt stops a search: the report says
// what was searched and the command fails with the context's error.
func TestSimulateCommandRefusesBadInputAndStopsWhenInterrupted(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, args := range [][]string{
		{"simulate", "--kinds", "nope"},
		{"simulate", "--faults", "meteor"},
		{"simulate", "--clients", "0"},
		{"simulate", "--times", "0", "--replay", "x.json"},
		{"simulate", "--budget", "0s"},
		{"simulate", "--rounds", "0"},
		{"simulate", "--per-process", "0"},
		{"simulate", "--kinds", "fair", "--per-process", "4"},
		{"simulate", "--replay", filepath.Join(t.TempDir(), "missing.json")},
	} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, noEnv, &out, &errOut); err == nil {
			t.Errorf("%v: accepted (%s)", args, out.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	err := Run(ctx, []string{"simulate", "--kinds", "lua,fenced", "--clients", "3", "--exhaustive", "--dir", t.TempDir(), "--json"}, noEnv, &out, &errOut)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("an interrupted search: %v, want context.Canceled", err)
	}
	var rep struct {
		Kinds []struct {
			Kind        string `json:"kind"`
			Complete    bool   `json:"complete"`
			Interrupted bool   `json:"interrupted"`
		} `json:"kinds"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Kinds) != 1 || !rep.Kinds[0].Interrupted || rep.Kinds[0].Complete {
		t.Fatalf("want one kind reported interrupted and not complete: %v\n%s", err, out.String())
	}
}
