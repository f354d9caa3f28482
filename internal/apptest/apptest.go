// Package apptest wires a whole service instance for tests: one data Redis and three masters
// (real redis-server processes when installed), the App, and an httptest server in front.
package apptest

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/internal/testredis"
	"seckill/lab/labapp"
)

// quiet drops go-redis's own log lines ("failed to dial" while a test has stopped a server on
// purpose); the service's errors still reach the test log through slog.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// Fixture is a running service with its Redis servers.
type Fixture struct {
	Cfg     config.Config
	App     *app.App
	HTTP    *httptest.Server
	Data    *redisproc.Server
	Masters []*redisproc.Server
	RDB     *redis.Client // a client on the data Redis, for assertions
}

// Config returns the built-in configuration pointed at fresh Redis servers (embedded=never).
func Config(t testing.TB, masters int) (config.Config, *redisproc.Server, []*redisproc.Server) {
	t.Helper()
	cfg, err := config.Load("", func(string) string { return "" }, modes.Names())
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	all := testredis.StartN(t, 1+masters)
	data, ms := all[0], all[1:]
	cfg.Redis.Addr = data.Addr
	cfg.Redis.Masters = nil
	for _, m := range ms {
		cfg.Redis.Masters = append(cfg.Redis.Masters, m.Addr)
	}
	cfg.Redis.Embedded = config.EmbeddedNever
	cfg.Server.Instance = "test-" + t.Name()
	return cfg, data, ms
}

// New starts a service; edit may change the configuration first.
func New(t testing.TB, edit func(*config.Config)) *Fixture {
	t.Helper()
	cfg, data, ms := Config(t, 3)
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(modes.Names()); err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := app.New(ctx, cfg, app.NewLogger(newTestWriter(t), "warn"), labapp.Lab{})
	if err != nil {
		t.Fatalf("app: %v", err)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() { srv.Close(); a.Close() })
	return &Fixture{Cfg: cfg, App: a, HTTP: srv, Data: data, Masters: ms, RDB: testredis.Client(t, data)}
}

// testWriter sends log lines to t.Log until the test ends, then drops them (background
// goroutines may log after the test has finished, which t.Log does not allow).
type testWriter struct {
	t    testing.TB
	done *atomic.Bool
}

func newTestWriter(t testing.TB) testWriter {
	w := testWriter{t: t, done: new(atomic.Bool)}
	t.Cleanup(func() { w.done.Store(true) })
	return w
}

func (w testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Logf("%s", p)
	}
	return len(p), nil
}
