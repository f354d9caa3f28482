package app_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"seckill/app"
	"seckill/internal/apptest"
	"seckill/internal/redisproc"
	"seckill/lab/labapp"
)

// keepAlive is one raw keep-alive connection to the service.
type keepAlive struct {
	c net.Conn
	r *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{c: c, r: bufio.NewReader(c)}
}

func (k *keepAlive) get(path string) (int, error) {
	_ = k.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(k.c, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

// With server.maxConns connections open and idle, the next connection is answered 503 at once and
// closed, the open ones are still served, and server.idleTimeout closes an idle one, whose place a
// new client then gets.
func TestConnectionCapAndIdleTimeout(t *testing.T) {
	t.Parallel()
	cfg, _, _ := apptest.Config(t, 3)
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Port, cfg.Server.MaxConns, cfg.Server.IdleTimeout = port, 3, 2*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &untilWriter{w: io.Discard, want: "try: curl", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, cfg, w, app.NewLogger(io.Discard, "error"), labapp.Lab{}) }()
	select {
	case <-w.seen:
	case err := <-done:
		t.Fatalf("serve ended before its start-up lines: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	held := make([]*keepAlive, cfg.Server.MaxConns)
	for i := range held {
		held[i] = dialKeepAlive(t, addr)
		if st, err := held[i].get("/healthz"); st != http.StatusOK {
			t.Fatalf("connection %d under the cap: %d, %v", i, st, err)
		}
	}
	began := time.Now()
	if st, err := dialKeepAlive(t, addr).get("/healthz"); st != http.StatusServiceUnavailable || time.Since(began) > time.Second {
		t.Fatalf("a connection past the cap: %d, %v after %v; want 503 at once", st, err, time.Since(began))
	}
	for i, k := range held {
		if st, err := k.get("/inventory"); st != http.StatusOK {
			t.Fatalf("connection %d after the refusal: %d, %v; want it still served", i, st, err)
		}
	}
	// Idle: the server closes each held connection after idleTimeout (the read ends with EOF).
	idle := time.Now()
	for i, k := range held {
		_ = k.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var ne net.Error
		if _, err := k.r.ReadByte(); err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d still open %v after its last request (idleTimeout %v): %v", i, time.Since(idle), cfg.Server.IdleTimeout, err)
		}
	}
	if st, err := dialKeepAlive(t, addr).get("/healthz"); st != http.StatusOK {
		t.Fatalf("a new connection once the idle ones closed: %d, %v", st, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
