package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"seckill/internal/testredis"
	"seckill/lab"
)

// labEnv points the configuration at fresh Redis servers (never the default ports).
func labEnv(t *testing.T) func(string) string {
	t.Helper()
	all := testredis.StartN(t, 4)
	data, ms := all[0], all[1:]
	env := map[string]string{
		"SECKILL_REDIS_ADDR":     data.Addr,
		"SECKILL_REDIS_MASTERS":  ms[0].Addr + "," + ms[1].Addr + "," + ms[2].Addr,
		"SECKILL_REDIS_EMBEDDED": "never",
		"SECKILL_LOG_LEVEL":      "error",
	}
	return func(k string) string { return env[k] }
}

func TestLabCommandJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"lab", "--scenario", "atomic", "--scenario", "none", "--json"},
		labEnv(t), &out, &errOut)
	if err != nil {
		t.Fatalf("seckill lab: %v\n%s", err, errOut.String())
	}
	var results []lab.Result
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(results) != 2 || results[0].Name != "none" || results[0].Verdict != lab.Reproduced ||
		results[1].Name != "atomic" || results[1].Verdict != lab.Held {
		t.Fatalf("want none REPRODUCED then atomic HELD, got %s", out.String())
	}
	for _, s := range []string{"[ 1/2] none", "[ 2/2] atomic", "REPRODUCED in", "2 scenarios in"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("progress on stderr lacks %q:\n%s", s, errOut.String())
		}
	}
}

func TestLabCommandTableAndExitStatus(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Run(context.Background(), []string{"lab", "--scenario", "atomic", "--details"}, labEnv(t), &out, &errOut)
	if err != nil {
		t.Fatalf("seckill lab: %v\n%s", err, errOut.String())
	}
	for _, s := range []string{"VERDICT", "atomic", "HELD", "ok   sold"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	if err := Run(context.Background(), []string{"lab", "--scenario", "nope"}, labEnv(t), &out, &errOut); !errors.Is(err, lab.ErrUnknownScenario) && !strings.Contains(errOut.String(), "unknown scenario") {
		t.Fatalf("an unknown scenario must fail, got %v", err)
	}
	if err := Run(context.Background(), []string{"lab", "--lease", "1ms"}, labEnv(t), &out, &errOut); err == nil {
		t.Fatal("a 1ms lease must be refused")
	}
}

// An UNEXPECTED verdict makes the command fail (exit status 1): here the "data Redis" accepts
// connections and closes them at once, so no scenario can run.
func TestLabCommandFailsOnUnexpected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by the cleanup
			}
			_ = c.Close()
		}
	}()
	env := labEnv(t)
	getenv := func(k string) string {
		if k == "SECKILL_REDIS_ADDR" {
			return ln.Addr().String()
		}
		return env(k)
	}
	var out, errOut bytes.Buffer
	err = Run(context.Background(), []string{"lab", "--scenario", "atomic"}, getenv, &out, &errOut)
	if !errors.Is(err, errUnexpected) {
		t.Fatalf("want errUnexpected, got %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "UNEXPECTED") || !strings.Contains(out.String(), "could not run") {
		t.Fatalf("the table must say why:\n%s", out.String())
	}
}
