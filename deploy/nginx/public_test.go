package nginx_test

// Runs deploy/nginx/public.conf with a real nginx in front of a recording upstream, and checks
// what its header says: the sale is rate-limited, the internals answer only to private networks,
// and the admin header never goes on from outside. The only changes made to the file are where it
// listens and where its upstream and files are (and, to play an outside client from this machine,
// 127.0.0.0/8 taken out of the private networks).

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstream records what reached the service.
type upstream struct {
	mu    sync.Mutex
	paths []string
	token []string // the X-Admin-Token each request carried ("" when none)
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.paths = append(u.paths, r.URL.Path)
	u.token = append(u.token, r.Header.Get("X-Admin-Token"))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"ok":true}`)
}

func (u *upstream) seen() ([]string, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.paths...), append([]string(nil), u.token...)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNginx runs public.conf against up; outside=true makes this machine an outside client.
func startNginx(t *testing.T, up *httptest.Server, outside bool) string {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (apt: nginx): this test runs the shipped config in a real nginx")
	}
	raw, err := os.ReadFile("public.conf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port := freePort(t)
	conf := string(raw)
	for _, r := range []struct{ old, new string }{
		{"        server seckill-1:8080;\n        server seckill-2:8080;\n        server seckill-3:8080;\n",
			"        server " + strings.TrimPrefix(up.URL, "http://") + ";\n"},
		{"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", port)},
		{"pid /tmp/nginx.pid;", "pid " + filepath.Join(dir, "nginx.pid") + ";"},
		{"error_log /dev/stderr warn;", "error_log " + filepath.Join(dir, "error.log") + " warn;"},
		{"access_log /dev/stdout upstream;", "access_log off;\n    client_body_temp_path " + dir + "/body;\n    proxy_temp_path " + dir +
			"/proxy;\n    fastcgi_temp_path " + dir + "/fcgi;\n    uwsgi_temp_path " + dir + "/uwsgi;\n    scgi_temp_path " + dir + "/scgi;"},
	} {
		if !strings.Contains(conf, r.old) {
			t.Fatalf("public.conf no longer has %q; update this test", r.old)
		}
		conf = strings.Replace(conf, r.old, r.new, 1)
	}
	if outside {
		if !strings.Contains(conf, "127.0.0.0/8    1;\n") {
			t.Fatal("public.conf no longer lists 127.0.0.0/8 as private; update this test")
		}
		conf = strings.Replace(conf, "127.0.0.0/8    1;\n", "", 1)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path, "-g", "daemon off;")
	out, _ := os.Create(filepath.Join(dir, "nginx.out"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		out.Close()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/nginx-health"); err == nil {
			r.Body.Close()
			return base
		}
		if i == 100 {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			o, _ := os.ReadFile(filepath.Join(dir, "nginx.out"))
			t.Fatalf("nginx did not answer: %s %s", log, o)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func send(t *testing.T, method, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Admin-Token", token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestPublicConfigFromOutside(t *testing.T) {
	up := &upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	base := startNginx(t, srv, true)
	for _, target := range []string{"GET /lab/scenarios", "POST /lab/burst", "GET /metrics", "GET /locks", "GET /swagger/index.html",
		"POST /inventory/restock", "POST /inventory/reset", "POST /getMultiLock", "GET /", "GET /dashboard/dashboard.js"} {
		method, path, _ := strings.Cut(target, " ")
		if s := send(t, method, base+path, "the-token"); s != http.StatusForbidden {
			t.Fatalf("%s from outside: %d, want 403", target, s)
		}
	}
	if paths, _ := up.seen(); len(paths) != 0 {
		t.Fatalf("requests refused by nginx reached the service: %v", paths)
	}
	for _, target := range []string{"POST /inventory/sale", "GET /inventory", "GET /readyz", "GET /healthz"} {
		method, path, _ := strings.Cut(target, " ")
		if s := send(t, method, base+path, "the-token"); s != http.StatusOK {
			t.Fatalf("%s from outside: %d, want 200", target, s)
		}
	}
	paths, tokens := up.seen()
	for i, tok := range tokens {
		if tok != "" {
			t.Fatalf("the admin header reached the service from outside on %s", paths[i])
		}
	}
	// The sale is rate-limited per client: a quick run of 60 gets some 429s.
	limited := 0
	for range 60 {
		if send(t, http.MethodPost, base+"/inventory/sale", "") == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("60 sales in a row from one client: none answered 429")
	}
	t.Logf("60 sales in a row from one client: %d answered 429", limited)
}

func TestPublicConfigFromAPrivateNetwork(t *testing.T) {
	up := &upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	base := startNginx(t, srv, false)
	for _, target := range []string{"GET /locks", "GET /metrics", "POST /inventory/restock"} {
		method, path, _ := strings.Cut(target, " ")
		if s := send(t, method, base+path, "the-token"); s != http.StatusOK {
			t.Fatalf("%s from a private network: %d, want 200", target, s)
		}
	}
	paths, tokens := up.seen()
	if len(paths) != 3 || tokens[2] != "the-token" {
		t.Fatalf("from a private network the operator's header goes on: saw %v with %v", paths, tokens)
	}
}
