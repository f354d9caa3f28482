package bench

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/redisproc"
)

// TestCommandCounter: the hook counts what the client sends, the same on redis-server and on
// miniredis: not the connection's setup, one per command, one per script call (plus the EVAL after a NOSCRIPT), each
// command of a pipeline, and MULTI/EXEC around a transaction's commands.
func TestCommandCounter(t *testing.T) {
	srv, err := redisproc.Start(redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 1, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	counter := &commandCounter{}
	c.AddHook(counter)
	ctx := context.Background()
	step := func(name string, want int64, f func() error) {
		t.Helper()
		counter.reset()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := counter.reset(); got != want {
			t.Errorf("%s (%s): counted %d, want %d", name, srv.Kind, got, want)
		}
	}
	// The first command dials: the connection's setup (HELLO, CLIENT SETINFO) is not counted.
	step("PING on a new connection", 1, func() error { return c.Ping(ctx).Err() })
	step("SET + GET", 2, func() error {
		if err := c.Set(ctx, "k", "1", 0).Err(); err != nil {
			return err
		}
		return c.Get(ctx, "k").Err()
	})
	step("pipeline of 3", 3, func() error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "k")
			p.Incr(ctx, "k")
			p.Get(ctx, "k")
			return nil
		})
		return err
	})
	step("transaction of 2", 4, func() error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "k")
			p.Get(ctx, "k")
			return nil
		})
		return err
	})
	script := redis.NewScript(`redis.call('incr', KEYS[1]); redis.call('incr', KEYS[1]); return redis.call('get', KEYS[1])`)
	step("script, not loaded yet (EVALSHA, NOSCRIPT, EVAL)", 2, func() error { return script.Run(ctx, c, []string{"k"}).Err() })
	step("script, loaded (EVALSHA; its inner commands do not count)", 1, func() error {
		return script.Run(ctx, c, []string{"k"}).Err()
	})
	if n := counter.load(); n != 0 {
		t.Errorf("reset left %d", n)
	}
}
