package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill/internal/testredis"
	"seckill/lab"
)

// labConfigFile writes a configuration file that points at fresh Redis servers (never the
// default ports), so that --config, not the environment, decides where the lab runs.
func labConfigFile(t *testing.T) string {
	t.Helper()
	all := testredis.StartN(t, 4)
	data, ms := all[0], all[1:]
	yaml := "redis:\n  addr: " + data.Addr + "\n  embedded: never\n  masters:\n"
	for _, m := range ms {
		yaml += "    - " + m.Addr + "\n"
	}
	yaml += "log:\n  level: error\n"
	path := filepath.Join(t.TempDir(), "seckill.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func noEnv(string) string { return "" }

// TestConfigBeforeOrAfterTheCommand: --config FILE may stand before or after the command, and
// the command still runs (it used to be read as "serve" with a stray argument).
func TestConfigBeforeOrAfterTheCommand(t *testing.T) {
	cfg := labConfigFile(t)
	for _, args := range [][]string{
		{"--config", cfg, "lab", "--scenario", "atomic", "--json"},
		{"lab", "--config", cfg, "--scenario", "atomic", "--json"},
		{"-config=" + cfg, "lab", "--json", "--scenario", "atomic"},
	} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, noEnv, &out, &errOut); err != nil {
			t.Fatalf("seckill %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		var results []lab.Result
		if err := json.Unmarshal(out.Bytes(), &results); err != nil {
			t.Fatalf("seckill %s: not JSON: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		if len(results) != 1 || results[0].Name != "atomic" || results[0].Verdict != lab.Held {
			t.Fatalf("seckill %s: want atomic HELD, got %s", strings.Join(args, " "), out.String())
		}
	}
}

func TestBenchTakesConfig(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"bench", "--config", labConfigFile(t), "--duration", "100ms", "--warmup", "10ms", "--rounds", "1",
		"--concurrency", "1", "--modes", "atomic", "--json"}
	if err := Run(context.Background(), args, noEnv, &out, &errOut); err != nil {
		t.Fatalf("seckill %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	if !json.Valid(out.Bytes()) {
		t.Fatalf("not JSON:\n%s", out.String())
	}
}

// TestBadCommandLines: an unknown command, flag or stray argument is a usage error (exit 2),
// with the usage on stderr and nothing run.
func TestBadCommandLines(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"--config", "x.yaml", "bogus"}, `unknown command "bogus"`},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"lab", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"lab", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "lab"}, `unexpected argument "lab"`},
		{[]string{"bench", "--json", "x"}, `unexpected argument "x"`},
		{[]string{"help", "bogus"}, `unknown command "bogus"`},
		{[]string{"help", "lab", "bench"}, "help takes one command name"},
	} {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), c.args, noEnv, &out, &errOut)
		var usage UsageError
		if !errors.As(err, &usage) {
			t.Errorf("seckill %s: err %v, want a usage error (exit 2)", strings.Join(c.args, " "), err)
			continue
		}
		if !strings.Contains(errOut.String(), c.want) || !strings.Contains(errOut.String(), "usage: seckill") {
			t.Errorf("seckill %s: stderr lacks %q or the usage:\n%s", strings.Join(c.args, " "), c.want, errOut.String())
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"help"}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		if !strings.Contains(out.String(), "  "+c.name+" ") {
			t.Errorf("help lacks command %s:\n%s", c.name, out.String())
		}
	}
	out.Reset()
	if err := Run(context.Background(), []string{"help", "lab"}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-scenario", "-json", "-config"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("help lab lacks %s:\n%s", s, out.String())
		}
	}
	if err := Run(context.Background(), []string{"lab", "-h"}, noEnv, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("lab -h: %v, want flag.ErrHelp (exit 0)", err)
	}
	// The help fits a terminal: no line of it, or of any command's flags, is over 100 characters
	// (a tab counted as the 8 columns a terminal gives it).
	for _, args := range append([][]string{{"help"}}, commandHelps()...) {
		out.Reset()
		if err := Run(context.Background(), args, noEnv, &out, &errOut); err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if n := len([]rune(strings.ReplaceAll(line, "\t", "        "))); n > 100 {
				t.Errorf("seckill %s: a line of %d characters: %q", strings.Join(args, " "), n, line)
			}
		}
	}
}

// commandHelps is `help NAME` for every command but help itself.
func commandHelps() [][]string {
	var out [][]string
	for _, c := range commands {
		if c.name != "help" {
			out = append(out, []string{"help", c.name})
		}
	}
	return out
}

// TestUsageColumnsAlign: every command's description starts in the same column, the longest
// name's included.
func TestUsageColumnsAlign(t *testing.T) {
	var b strings.Builder
	printUsage(&b)
	_, list, _ := strings.Cut(b.String(), "commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	col := -1
	for _, l := range strings.Split(list, "\n") {
		name := strings.Fields(l)[0]
		at := strings.Index(l, name) + len(name)
		at += len(l[at:]) - len(strings.TrimLeft(l[at:], " "))
		if col >= 0 && at != col {
			t.Errorf("%q: its description starts at column %d, the others at %d:\n%s", name, at, col, list)
		}
		col = at
	}
	if col < 0 {
		t.Fatalf("no commands in the usage:\n%s", b.String())
	}
}
