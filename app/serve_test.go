package app_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/app"
	"seckill/internal/apptest"
	"seckill/internal/redisproc"
	"seckill/lab/labapp"
)

type lineBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStartUpLineNamesTheBoundAddress: the start-up line says where the service really listens
// (every interface when server.host is empty), not a loopback address it may not be limited to,
// and the dashboard's address a browser on this machine can open.
func TestStartUpLineNamesTheBoundAddress(t *testing.T) {
	for _, c := range []struct{ host, want string }{{"", "[::]:"}, {"127.0.0.1", "127.0.0.1:"}} {
		cfg, _, _ := apptest.Config(t, 3)
		port, err := redisproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Server.Host, cfg.Server.Port = c.host, port
		ctx, cancel := context.WithCancel(context.Background())
		out := &lineBuffer{}
		done := make(chan error, 1)
		go func() { done <- app.Serve(ctx, cfg, out, app.NewLogger(&lineBuffer{}, "error"), labapp.Lab{}) }()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "listening on") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
		line, _, _ := strings.Cut(out.String(), "\n")
		want := fmt.Sprintf("listening on %s%d ", c.want, port)
		if c.host == "" && strings.Contains(line, "listening on 0.0.0.0:") {
			want = fmt.Sprintf("listening on %s ", net.JoinHostPort("0.0.0.0", fmt.Sprint(port)))
		}
		if !strings.Contains(line, want) {
			t.Fatalf("server.host=%q: start-up line %q does not contain %q", c.host, line, want)
		}
		// A wildcard address is not one a browser can open: the dashboard is given on loopback.
		dash := fmt.Sprintf("dashboard http://%s/,", net.JoinHostPort(cmp.Or(c.host, "127.0.0.1"), fmt.Sprint(port)))
		if !strings.Contains(line, dash) {
			t.Fatalf("server.host=%q: start-up line %q does not contain %q", c.host, line, dash)
		}
	}
}
