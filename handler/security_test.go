package handler_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/app"
	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/lab"
	"seckill/lab/labapp"
)

// syncBuffer collects log lines from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func secret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// requirePass turns on AUTH on running servers (redisproc waits for an unauthenticated PING,
// so the password is set after the start).
func requirePass(t *testing.T, password string, servers ...*redisproc.Server) {
	t.Helper()
	for _, s := range servers {
		if err := s.RequirePass(password); err != nil {
			t.Fatal(err)
		}
	}
}

// passwordConfig is a configuration whose Redis servers all require a fresh password, given to
// the service the way production gives it: the SECKILL_REDIS_PASSWORD environment variable.
func passwordConfig(t *testing.T) (config.Config, string, []*redisproc.Server) {
	t.Helper()
	password := secret(t, "pw-")
	cfg, data, masters := apptest.Config(t, 3)
	servers := append([]*redisproc.Server{data}, masters...)
	requirePass(t, password, servers...)
	env := map[string]string{
		"SECKILL_REDIS_PASSWORD": password, "SECKILL_REDIS_ADDR": cfg.Redis.Addr,
		"SECKILL_REDIS_MASTERS": strings.Join(cfg.Redis.Masters, ","), "SECKILL_REDIS_EMBEDDED": "never",
		"SECKILL_LOG_LEVEL": "debug",
	}
	loaded, err := config.Load("", func(k string) string { return env[k] }, modes.Names())
	if err != nil {
		t.Fatalf("config from the environment: %v", err)
	}
	if loaded.Redis.Password != password {
		t.Fatal("SECKILL_REDIS_PASSWORD did not reach redis.password")
	}
	loaded.Server.Instance = cfg.Server.Instance
	loaded.Lock.Wait, loaded.Lock.Lease = 300*time.Millisecond, time.Second
	return loaded, password, servers
}

// TestRedisPasswordNeverShows: with AUTH on every Redis, the service works; with a wrong password
// and with every Redis unreachable, no answer body, header or log line carries the password.
func TestRedisPasswordNeverShows(t *testing.T) {
	t.Parallel()
	cfg, password, servers := passwordConfig(t)
	logs := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A wrong password: the start fails, and says so without the password it tried.
	wrong := cfg
	wrong.Redis.Password = secret(t, "wrong-")
	if a, err := app.New(ctx, wrong, app.NewLogger(logs, "debug"), labapp.Lab{}); err == nil {
		a.Close()
		t.Fatal("the service started with a wrong Redis password")
	} else if strings.Contains(err.Error(), wrong.Redis.Password) {
		t.Fatalf("the start error shows the password: %v", err)
	} else {
		t.Logf("start with a wrong password: %v", err)
	}

	a, err := app.New(ctx, cfg, app.NewLogger(logs, "debug"), labapp.Lab{})
	if err != nil {
		t.Fatalf("start with the right password: %v", err)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() { srv.Close(); a.Close() })
	if r := do(t, http.MethodPost, srv.URL+"/inventory/sale?lock=reentrant", nil); r.status != http.StatusOK {
		t.Fatalf("a sale with AUTH on: %d %s", r.status, r.raw)
	}

	requests := []struct{ method, target string }{
		{http.MethodPost, "/inventory/sale?lock=lua"}, {http.MethodPost, "/inventory/sale?lock=reentrant"},
		{http.MethodPost, "/inventory/sale?lock=multilock"}, {http.MethodPost, "/inventory/sale?lock=redlock"},
		{http.MethodPost, "/inventory/sale?lock=fenced"}, {http.MethodPost, "/inventory/sale?lock=atomic"},
		{http.MethodGet, "/inventory"}, {http.MethodGet, "/readyz"}, {http.MethodGet, "/locks"},
		{http.MethodPost, "/inventory/reset?stock=5"}, {http.MethodGet, "/getMultiLock?holdSeconds=0"},
		{http.MethodPost, "/lab/burst?n=3&lock=lua"}, {http.MethodGet, "/metrics"},
	}
	type answer struct {
		target, body string
		status       int
		took         time.Duration
		err          error
	}
	leaks := []string{"refused", "WRONGPASS", "NOAUTH", "dial tcp", "i/o timeout"}
	for _, srv := range servers {
		leaks = append(leaks, srv.Addr)
	}
	// check sends the requests at once (a paused Redis costs each one a client timeout) and
	// fails on any answer that carries the password.
	check := func(phase string, skip ...string) {
		t.Helper()
		answers := make([]answer, len(requests))
		var wg sync.WaitGroup
		for i, q := range requests {
			if slices.Contains(skip, q.target) {
				continue
			}
			wg.Go(func() {
				a := answer{target: q.method + " " + q.target}
				began := time.Now()
				req, err := http.NewRequest(q.method, srv.URL+q.target, nil)
				if err == nil {
					var res *http.Response
					if res, err = http.DefaultClient.Do(req); err == nil {
						var head strings.Builder
						body, rerr := io.ReadAll(res.Body)
						_ = res.Body.Close()
						err = errors.Join(rerr, res.Header.Write(&head))
						a.status, a.body = res.StatusCode, head.String()+string(body)
					}
				}
				a.took, a.err = time.Since(began), err
				answers[i] = a
			})
		}
		wg.Wait()
		failed := 0
		for _, a := range answers {
			if a.target == "" {
				continue
			}
			if a.err != nil {
				t.Fatalf("%s: %s: %v", phase, a.target, a.err)
			}
			t.Logf("%s: %s: %d in %s", phase, a.target, a.status, a.took.Round(time.Millisecond))
			if a.status >= 500 {
				failed++
			}
			if strings.Contains(a.body, password) {
				t.Fatalf("%s: %s (%d) shows the Redis password: %.300s", phase, a.target, a.status, a.body)
			}
			// What the public may reach (deploy/nginx/public.conf) names no server and no Redis reply.
			if public(a.target) {
				for _, leak := range leaks {
					if strings.Contains(a.body, leak) {
						t.Fatalf("%s: %s (%d) shows %q: %.500s", phase, a.target, a.status, leak, a.body)
					}
				}
			}
		}
		if phase != "up" && failed == 0 {
			t.Fatalf("%s: no request failed, so nothing was checked", phase)
		}
	}
	check("up")

	// The password changes under the running service: its new connections get WRONGPASS.
	if servers[0].PID() != 0 {
		changed := secret(t, "changed-")
		for _, srv := range servers {
			c := srv.Client()
			c.Options().Password = password
			err := errors.Join(c.ConfigSet(ctx, "requirepass", changed).Err(), c.Close())
			c = srv.Client()
			c.Options().Password = changed
			err = errors.Join(err, c.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(), c.Close())
			if err != nil {
				t.Fatal(err)
			}
		}
		check("wrongpass", "/inventory/sale?lock=redlock")
		if out := logs.String(); !strings.Contains(out, "WRONGPASS") {
			t.Fatalf("the wrong password phase left no WRONGPASS in the logs: nothing was checked")
		}
		for _, srv := range servers {
			c := srv.Client()
			c.Options().Password = changed
			err := errors.Join(c.ConfigSet(ctx, "requirepass", password).Err(), c.Close())
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	// Unreachable: every server paused (connections hang, clients time out), then stopped
	// (connections refused). While paused, the slowest reads (several servers one after the
	// other, 2 s each) are left to the stopped phase.
	if servers[0].PID() != 0 {
		for _, s := range servers {
			if err := s.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		check("paused", "/readyz", "/locks", "/inventory/sale?lock=redlock")
		for _, s := range servers {
			if err := s.Resume(); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		t.Log("the paused phase needs real redis-server processes to SIGSTOP (apt-get install redis-server); checking the stopped phase only")
	}
	for _, s := range servers {
		s.Stop()
	}
	check("stopped")

	out := logs.String()
	if strings.Contains(out, password) || strings.Contains(out, wrong.Redis.Password) {
		i := strings.Index(out, password)
		if i < 0 {
			i = strings.Index(out, wrong.Redis.Password)
		}
		t.Fatalf("the logs show a Redis password: ...%s...", out[max(0, i-200):min(len(out), i+50)])
	}
	// The logs are not silent about the outage (so the check above had something to read).
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "refused") {
		t.Fatalf("expected error lines about the outage in the logs; got %d bytes", len(out))
	}
}

// public reports whether target is one deploy/nginx/public.conf serves to anyone.
func public(target string) bool {
	_, path, _ := strings.Cut(target, " ")
	path, _, _ = strings.Cut(path, "?")
	return slices.Contains([]string{"/inventory/sale", "/inventory", "/readyz", "/healthz"}, path)
}

// TestAdminTokenGuardsResetAndTheLab: with server.adminToken set, every reset and lab POST (and
// the lock-holding /getMultiLock) needs X-Admin-Token: missing, wrong, prefixed or extended tokens
// are 401 and change nothing in Redis; the right one passes.
func TestAdminTokenGuardsResetAndTheLab(t *testing.T) {
	t.Parallel()
	token := secret(t, "tok-")
	f := apptest.New(t, func(c *config.Config) { c.Server.AdminToken = token })
	servers := redisServers(t, f)
	scenario := lab.Scenarios()[0].Name

	engine, ok := f.App.Handler.(*gin.Engine)
	if !ok {
		t.Fatalf("handler.New returned %T, not a *gin.Engine", f.App.Handler)
	}
	var guarded []string
	for _, r := range engine.Routes() {
		if r.Method == http.MethodPost && (strings.HasPrefix(r.Path, "/lab/") || r.Path == "/inventory/reset" ||
			r.Path == "/inventory/restock" || r.Path == "/getMultiLock") {
			guarded = append(guarded, r.Method+" "+strings.ReplaceAll(r.Path, ":name", scenario))
		}
	}
	if len(guarded) < 5 {
		t.Fatalf("found only %v to guard", guarded)
	}
	query := map[string]string{"/inventory/reset": "?stock=3", "/inventory/restock": "?stock=3", "/lab/burst": "?n=1&lock=lua", "/getMultiLock": "?holdSeconds=0"}
	wrongs := map[string]string{
		"missing": "", "wrong, same length": strings.Repeat("x", len(token)), "a prefix": token[:len(token)-1],
		"extended": token + "x", "upper case": strings.ToUpper(token), "another one": secret(t, "tok-"),
	}
	for _, route := range guarded {
		method, path, _ := strings.Cut(route, " ")
		for name, tok := range wrongs {
			before := snapshotRedis(t, servers)
			req, err := http.NewRequest(method, f.HTTP.URL+path+query[path], nil)
			if err != nil {
				t.Fatal(err)
			}
			if tok != "" {
				req.Header.Set("X-Admin-Token", tok)
			}
			r := doReq(t, req)
			if r.status != http.StatusUnauthorized || !strings.Contains(r.raw, "X-Admin-Token") {
				t.Fatalf("%s with the token %s: %d %s", route, name, r.status, r.raw)
			}
			if strings.Contains(r.raw, token) {
				t.Fatalf("%s: the 401 answer shows the token", route)
			}
			if d := before.diff(snapshotRedis(t, servers)); len(d) > 0 {
				t.Fatalf("%s refused (token %s) but Redis changed: %v", route, name, d)
			}
		}
	}
	// The right token passes (the scenario run is left out: it takes seconds).
	for _, target := range []string{"/inventory/reset?stock=3", "/lab/burst?n=1&lock=lua"} {
		req, _ := http.NewRequest(http.MethodPost, f.HTTP.URL+target, nil)
		req.Header.Set("X-Admin-Token", token)
		if r := doReq(t, req); r.status != http.StatusOK {
			t.Fatalf("%s with the right token: %d %s", target, r.status, r.raw)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, f.HTTP.URL+"/getMultiLock?holdSeconds=0", nil)
	req.Header.Set("X-Admin-Token", token)
	if r := doReq(t, req); r.status != http.StatusOK {
		t.Fatalf("/getMultiLock with the right token: %d %s", r.status, r.raw)
	}
	// With a token set, what changes state is POST only, the right token or not.
	req, _ = http.NewRequest(http.MethodGet, f.HTTP.URL+"/getMultiLock?holdSeconds=0", nil)
	req.Header.Set("X-Admin-Token", token)
	if r := doReq(t, req); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != http.MethodPost {
		t.Fatalf("GET /getMultiLock with the token set: %d %s", r.status, r.raw)
	}
	// Sales and reads need no token.
	for _, target := range []string{"/inventory", "/locks", "/lab/scenarios", "/healthz"} {
		if r := do(t, http.MethodGet, f.HTTP.URL+target, nil); r.status != http.StatusOK {
			t.Fatalf("GET %s without a token: %d", target, r.status)
		}
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale", nil); r.status != http.StatusOK {
		t.Fatalf("a sale without a token: %d %s", r.status, r.raw)
	}
}

func doReq(t *testing.T, req *http.Request) resp {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
}

// TestAdminTokenIsComparedInConstantTime reads the admin middleware's source: the token must be
// compared with subtle.ConstantTimeCompare, and no == or != may compare two strings there (a
// plain comparison returns at the first differing byte, which a caller can time).
func TestAdminTokenIsComparedInConstantTime(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var admin *ast.FuncDecl
	for _, d := range file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "admin" {
			admin = fd
		}
	}
	if admin == nil {
		t.Fatal("no func admin in routes.go")
	}
	constantTime := false
	ast.Inspect(admin.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "subtle" {
					constantTime = true
				}
			}
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "EqualFold" || sel.Sel.Name == "Compare") {
				t.Errorf("%s: admin compares with %s, which is not constant-time", fset.Position(n.Pos()), sel.Sel.Name)
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			_, litX := n.X.(*ast.BasicLit)
			_, litY := n.Y.(*ast.BasicLit)
			if !litX && !litY {
				t.Errorf("%s: admin compares two values with %s", fset.Position(n.Pos()), n.Op)
			}
		}
		return true
	})
	if !constantTime {
		t.Fatal("admin does not use subtle.ConstantTimeCompare")
	}
}

// TestServerTimeouts runs the real server (app.Serve): a client that sends its headers too slowly
// is cut off after server.readTimeout, a handler that answers after server.writeTimeout cannot
// deliver its answer, and oversized headers are refused. The defaults are set and long enough
// for the lock wait plus the longest business time.
func TestServerTimeouts(t *testing.T) {
	t.Parallel()
	def, err := config.Load("", func(string) string { return "" }, modes.Names())
	if err != nil {
		t.Fatal(err)
	}
	if def.Server.ReadTimeout <= 0 || def.Server.WriteTimeout <= 0 || def.Server.ShutdownTimeout <= 0 {
		t.Fatalf("default server timeouts not set: %+v", def.Server)
	}
	if def.Server.WriteTimeout < def.Lock.Wait+def.Lab.MaxWork {
		t.Fatalf("default writeTimeout %s is shorter than lock.wait + lab.maxWork (%s)", def.Server.WriteTimeout, def.Lock.Wait+def.Lab.MaxWork)
	}

	cfg, _, _ := apptest.Config(t, 3)
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Host, cfg.Server.Port = "127.0.0.1", port
	cfg.Server.ReadTimeout, cfg.Server.WriteTimeout = 400*time.Millisecond, 800*time.Millisecond
	cfg.Redis.Password = "" // the servers of apptest.Config have no AUTH
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	stdout := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, cfg, stdout, app.NewLogger(logs, "info"), labapp.Lab{}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not return after its context ended")
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	base := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, err := http.Get(base + "/healthz"); err == nil {
			_ = r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not answer; logs: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Slow headers: half a request line, then nothing.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(bufio.NewReader(conn))
	took := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a client sending its headers slowly was not cut off within 5 s (readTimeout %s)", cfg.Server.ReadTimeout)
	}
	if took < cfg.Server.ReadTimeout-50*time.Millisecond || took > cfg.Server.ReadTimeout+2*time.Second {
		t.Fatalf("slow headers cut off after %s, readTimeout is %s", took, cfg.Server.ReadTimeout)
	}
	if strings.Contains(string(rest), "200 OK") {
		t.Fatalf("a half request got an answer: %q", rest)
	}
	t.Logf("slow headers: connection closed after %s (readTimeout %s)", took.Round(time.Millisecond), cfg.Server.ReadTimeout)

	// An answer later than writeTimeout is not delivered.
	start = time.Now()
	res, err := http.Post(base+"/inventory/sale?lock=lua&workMs=1500", "", nil)
	if err == nil {
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		t.Fatalf("an answer after %s arrived despite writeTimeout %s: %d %s", time.Since(start), cfg.Server.WriteTimeout, res.StatusCode, body)
	}
	t.Logf("a 1.5 s sale with writeTimeout %s: %v after %s", cfg.Server.WriteTimeout, err, time.Since(start).Round(time.Millisecond))

	// Oversized headers (MaxHeaderBytes).
	req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 200<<10))
	if res, err := http.DefaultClient.Do(req); err == nil {
		_ = res.Body.Close()
		if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("200 KiB of headers: %d, want 431", res.StatusCode)
		}
	}
	if out := stdout.String(); !strings.Contains(out, fmt.Sprintf(":%d", port)) {
		t.Fatalf("serve did not announce its address: %q", out)
	}
}
