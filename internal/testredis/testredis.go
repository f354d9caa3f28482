// Package testredis gives tests Redis servers: real redis-server processes on free loopback
// ports when installed (set SECKILL_TEST_REDIS=embedded to force in-process ones), stopped when
// the test ends.
package testredis

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"

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

// Counter counts the commands its clients send (see locktest.Counter).
type Counter = locktest.Counter

// RunParallel is a TestMain for packages whose tests mostly wait: up to n of their parallel tests
// at once (locktest.RunParallel).
func RunParallel(m *testing.M, n int) { locktest.RunParallel(m, n) }
