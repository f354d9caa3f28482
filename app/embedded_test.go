package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"seckill/app"
	"seckill/config"
	"seckill/embedded"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/lab/labapp"
)

// freeAddrs gives n loopback addresses where nothing listens.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		port, err := redisproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	return out
}

// onFreeAddrs is the built-in configuration with every Redis on an address where nothing answers.
func onFreeAddrs(t *testing.T, edit func(*config.Config)) config.Config {
	t.Helper()
	cfg, err := config.Load("", func(string) string { return "" }, modes.Names())
	if err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, 4)
	cfg.Redis.Addr, cfg.Redis.Masters = addrs[0], addrs[1:]
	edit(&cfg)
	return cfg
}

// Away from the quick start's addresses, or with the lab off, auto starts no in-memory Redis: a
// Redis down at start fails the start, naming why, instead of selling into memory.
func TestNoSilentInMemoryRedis(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		lab  bool
		why  string
	}{{"lab on, other addresses", true, "quick start"}, {"lab off", false, "lab.enabled=false"}} {
		cfg := onFreeAddrs(t, func(c2 *config.Config) { c2.Lab.Enabled = c.lab })
		if err := cfg.Validate(modes.Names()); err != nil {
			t.Fatal(err)
		}
		a, err := app.New(t.Context(), cfg, app.NewLogger(io.Discard, "error"), labapp.Lab{})
		if err == nil {
			a.Close()
			t.Fatalf("%s: the service started with nothing answering on %s", c.name, cfg.Redis.Addr)
		}
		if !errors.Is(err, embedded.ErrUnreachable) || !strings.Contains(err.Error(), c.why) {
			t.Fatalf("%s: %v, want unreachable naming %q", c.name, err, c.why)
		}
	}
}

// An in-memory Redis the user asked for (redis.embedded=always, with the lab on) is named on the
// start-up line and in /readyz as "in-memory, not durable".
func TestInMemoryRedisSaysSo(t *testing.T) {
	t.Parallel()
	cfg := onFreeAddrs(t, func(c *config.Config) { c.Redis.Embedded = config.EmbeddedAlways })
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Port = port
	if err := cfg.Validate(modes.Names()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lines := newLineWriter()
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, cfg, lines, app.NewLogger(io.Discard, "error"), labapp.Lab{}) }()
	var line string
	select {
	case line = <-lines.first:
	case err := <-done:
		t.Fatalf("serve ended before its start-up line: %v", err)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(line, "in-memory, not durable") || !strings.Contains(line, cfg.Redis.Addr) {
		t.Fatalf("start-up line %q does not say the data Redis is in memory", line)
	}
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), "ok (in-memory, not durable)") != 4 {
		t.Fatalf("/readyz %d %s: want every Redis ok (in-memory, not durable)", resp.StatusCode, body)
	}
}

// lineWriter hands the first line written to it on first.
type lineWriter struct {
	first chan string
	buf   strings.Builder
	sent  bool
}

func newLineWriter() *lineWriter { return &lineWriter{first: make(chan string, 1)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	if !w.sent {
		w.buf.Write(p)
		if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok {
			w.sent = true
			w.first <- line
		}
	}
	return len(p), nil
}

// Listening beyond this machine with the lab on and no admin token (the container's posture)
// prints a warning naming the posture; on loopback, or with a token or the lab off, none.
func TestOpenPostureWarns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, host, token string
		lab, warn         bool
	}{
		{"every interface, lab on, no token", "", "", true, true},
		{"loopback", "127.0.0.1", "", true, false},
		{"every interface, token", "", "t0ken-for-the-test", true, false},
		{"every interface, lab off", "", "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, _, _ := apptest.Config(t, 3)
			port, err := redisproc.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Server.Host, cfg.Server.Port, cfg.Server.AdminToken, cfg.Lab.Enabled = c.host, port, c.token, c.lab
			ctx, cancel := context.WithCancel(context.Background())
			out := &lineBuffer{}
			w := &untilWriter{w: out, want: "try: curl", seen: make(chan struct{})}
			done := make(chan error, 1)
			go func() { done <- app.Serve(ctx, cfg, w, app.NewLogger(io.Discard, "error"), labapp.Lab{}) }()
			select {
			case <-w.seen:
			case err := <-done:
				t.Fatalf("serve ended before its start-up lines: %v", err)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v", err)
			}
			got := strings.Contains(out.String(), "WARNING: listening on") && strings.Contains(out.String(), "lab.enabled=true")
			if got != c.warn {
				t.Fatalf("warning %t, want %t: %s", got, c.warn, out.String())
			}
		})
	}
}

// untilWriter passes writes to w and closes seen once a write has contained want (Serve writes
// each start-up line in one call, the warning before the "try" line).
type untilWriter struct {
	w    io.Writer
	want string
	seen chan struct{}
	done bool
}

func (u *untilWriter) Write(p []byte) (int, error) {
	n, err := u.w.Write(p)
	if !u.done && strings.Contains(string(p), u.want) {
		u.done = true
		close(u.seen)
	}
	return n, err
}
