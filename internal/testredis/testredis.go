// Package testredis gives tests Redis servers: real redis-server processes on free loopback
// ports when installed (set SECKILL_TEST_REDIS=embedded to force in-process ones), stopped when
// the test ends.
package testredis

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/internal/redisproc"
)

// Long reports whether the long, stability-minded repetitions are asked for
// (SECKILL_TEST_LONG=1, which CI sets): the lab run 10 times, multi-second loops. By default
// every behaviour is still checked, once.
func Long() bool {
	v := os.Getenv("SECKILL_TEST_LONG")
	return v != "" && v != "0"
}

// Start starts one server for t.
func Start(t testing.TB) *redisproc.Server {
	t.Helper()
	s, err := redisproc.Start(redisproc.Options{})
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartN starts n servers for t (for the independent masters), at once: a real redis-server
// takes about 100 ms to answer, and most tests want four.
func StartN(t testing.TB, n int) []*redisproc.Server {
	t.Helper()
	out := make([]*redisproc.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i], errs[i] = redisproc.Start(redisproc.Options{}) })
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			t.Cleanup(s.Close)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start redis: %v", err)
	}
	return out
}

// Client opens a client on s, closed when t ends.
func Client(t testing.TB, s *redisproc.Server) *redis.Client {
	t.Helper()
	c := s.Client()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Universal wraps clients as the UniversalClient interface the lock package takes.
func Universal(cs ...*redis.Client) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// Counter counts the commands its clients send, through a go-redis hook: a pipeline counts each
// command in it, a script call counts once (as EVALSHA, or EVAL). Counting on the client side works
// the same on a real redis-server and on the in-process one (which has no INFO commandstats).
type Counter struct {
	mu     sync.Mutex
	byName map[string]int64
}

// Count installs a counting hook on every client and returns the counter. A client keeps the hook
// until it is closed, so count only on a test's own clients.
func Count(cs ...*redis.Client) *Counter {
	c := &Counter{byName: map[string]int64{}}
	for _, cl := range cs {
		cl.AddHook(counterHook{c})
	}
	return c
}

// Load is the number of commands sent since the last Reset.
func (c *Counter) Load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.byName {
		n += v
	}
	return n
}

// Of is the number of commands with one of these names (lower case, e.g. "evalsha") sent since
// the last Reset.
func (c *Counter) Of(names ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, name := range names {
		n += c.byName[name]
	}
	return n
}

// Reset starts counting from zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byName)
}

func (c *Counter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		c.byName[cmd.Name()]++
	}
}

type counterHook struct{ c *Counter }

func (h counterHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h counterHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.add(cmd)
		return next(ctx, cmd)
	}
}

func (h counterHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.add(cmds...)
		return next(ctx, cmds)
	}
}

// RunParallel is a TestMain for packages whose tests mostly wait (on leases, TTLs, servers
// starting) rather than compute: it runs up to n of their parallel tests at once instead of
// GOMAXPROCS, unless -test.parallel is given.
func RunParallel(m *testing.M, n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			fmt.Fprintln(os.Stderr, "testredis:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
