package interop

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/redisproc"
)

// TestWaitersRideOutASentinelFailover: the master is killed while three waiters of every kind on
// one server wait behind a holder whose lock reached the replica (WithReplicas). Sentinel
// promotes the replica within seconds, and every waiter gets the lock within its wait: none gives
// up on the refused connections of the failover with ErrUnavailable.
func TestWaitersRideOutASentinelFailover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := redisproc.StartReplicated(ctx, redisproc.ReplicatedOptions{})
	if errors.Is(err, redisproc.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	client := func() redis.UniversalClient {
		c := r.FailoverClient()
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	kinds := map[string]func(redis.UniversalClient, ...lock.Option) (*lock.Locker, error){
		"lua": lock.NewLua, "reentrant": lock.NewReentrant, "fair": lock.NewFair, "fenced": lock.NewFenced,
	}
	const waiters, wait = 3, 25 * time.Second
	quiet := lock.WithLogger(slog.New(slog.DiscardHandler))
	type result struct {
		kind string
		took time.Duration
		err  error
	}
	results := make(chan result, waiters*len(kinds))
	var holders []*lock.Lease
	var started sync.WaitGroup
	killed := make(chan time.Time, 1)
	for name, build := range kinds {
		holder, err := build(client(), lock.WithLease(time.Second), lock.WithReplicas(1, 5*time.Second), quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		key := "{failover}:" + name
		le, err := holder.Acquire(ctx, key, lock.Options{Wait: 5 * time.Second})
		if err != nil {
			t.Fatalf("%s: the holder: %v", name, err)
		}
		holders = append(holders, le)
		w, err := build(client(), lock.WithLease(time.Second), quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for range waiters {
			started.Add(1)
			go func() {
				started.Done()
				le, err := w.Acquire(ctx, key, lock.Options{Wait: wait})
				at := <-killed
				killed <- at
				results <- result{name, time.Since(at), err}
				if err == nil {
					_ = le.Release(context.Background())
				}
			}()
		}
	}
	started.Wait()
	time.Sleep(200 * time.Millisecond) // the waiters are in line behind the holders
	at := time.Now()
	r.Master.Stop()
	killed <- at
	if err := r.WaitMaster(ctx, r.Replica.Addr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica promoted %s after the master was killed", time.Since(at).Round(time.Millisecond))
	// The holders give their locks back (on the new master, once it answers).
	for _, le := range holders {
		_ = le.Release(ctx)
	}
	for range waiters * len(kinds) {
		res := <-results
		if res.err != nil {
			t.Errorf("%s: a waiter with a %s wait across the failover: %v after %s", res.kind, wait, res.err, res.took)
			continue
		}
		t.Logf("%s: a waiter got the lock %s after the kill", res.kind, res.took.Round(time.Millisecond))
	}
}
