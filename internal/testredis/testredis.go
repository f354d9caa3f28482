// Package testredis gives tests Redis servers: real redis-server processes on free loopback
// ports when installed (set SECKILL_TEST_REDIS=embedded to force in-process ones), stopped when
// the test ends.
package testredis

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/internal/redisproc"
)

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

// StartN starts n servers for t (for the independent masters).
func StartN(t testing.TB, n int) []*redisproc.Server {
	t.Helper()
	out := make([]*redisproc.Server, n)
	for i := range out {
		out[i] = Start(t)
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
