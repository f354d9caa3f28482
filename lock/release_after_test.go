package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock/script"
)

// TestReleaseAfterJoinsThePipeline: the holder's last write and the release take one round trip
// in the locks that keep one value on one server; the next holder sees the write; a waiter in
// another process is handed the lock by that release.
func TestReleaseAfterJoinsThePipeline(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"lua", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := newClientSet(t)
			ls := lineLockers(t, srv, mode, 2, 30*time.Second)
			rt := srv.counts[0]
			key := "{after}:lock:" + mode
			data := "{after}:stock:" + mode
			le, err := ls[0].Acquire(t.Context(), key, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 1)
			done := make(chan struct{})
			defer func() { <-done }()
			go func() {
				defer close(done)
				w, err := ls[1].Acquire(t.Context(), key, Options{Wait: 10 * time.Second})
				if err != nil {
					t.Errorf("waiter: %v", err)
					got <- ""
					return
				}
				got <- srv.all[1].Get(t.Context(), data).Val()
				if err := w.Release(context.Background()); err != nil {
					t.Errorf("waiter release: %v", err)
				}
			}()
			waitQueued(t, srv.all[0], key, 1)
			if err := classic("LineRelease").Load(t.Context(), srv.all[0]).Err(); err != nil {
				t.Fatal(err)
			}
			rt.Reset()
			p := srv.all[0].Pipeline()
			set := p.Set(t.Context(), data, "written by the first holder", 0)
			if err := le.ReleaseAfter(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if err := set.Err(); err != nil {
				t.Fatal(err)
			}
			if n, c := rt.RoundTrips(), rt.Of("set", "evalsha"); n != 1 || c != 2 {
				t.Errorf("the write and the release took %d round trips for %d commands, want one for 2", n, c)
			}
			if v := <-got; v != "written by the first holder" {
				t.Errorf("the next holder read %q", v)
			}
			// Released already: the commands still run, and the answer is ErrNotHeld.
			p = srv.all[0].Pipeline()
			again := p.Set(t.Context(), data, "after the release", 0)
			if err := le.ReleaseAfter(t.Context(), p); !errors.Is(err, ErrNotHeld) {
				t.Errorf("a second release: %v, want ErrNotHeld", err)
			}
			if again.Err() != nil || srv.all[0].Get(t.Context(), data).Val() != "after the release" {
				t.Errorf("the commands of a second release did not run: %v", again.Err())
			}
		})
	}
}

// TestReleaseAfterRedissonLayouts: the reentrant and fair locks' releases join the holder's
// pipeline too (one pipeline of 2, the write there, the lock gone).
func TestReleaseAfterRedissonLayouts(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"reentrant", "fair"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := newClientSet(t)
			rdb := srv.all[0]
			rt := srv.counts[0]
			l, err := newNamed(mode, rdb, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			key := "{joined}:lock:" + mode
			for round := range 2 { // the first round loads the scripts
				le, err := l.Acquire(t.Context(), key, Options{})
				if err != nil {
					t.Fatal(err)
				}
				rt.Reset()
				p := rdb.Pipeline()
				set := p.Incr(t.Context(), "{joined}:data")
				if err := le.ReleaseAfter(t.Context(), p); err != nil {
					t.Fatal(err)
				}
				if n, c := rt.RoundTrips(), rt.Of("incr", "evalsha"); round == 1 && (n != 1 || c != 2) {
					t.Errorf("the write and the release took %d round trips for %d commands, want one for 2", n, c)
				}
				if set.Val() != int64(round+1) || rdb.Exists(t.Context(), key).Val() != 0 {
					t.Fatalf("round %d: write %d (%v), lock left: %d", round, set.Val(), set.Err(), rdb.Exists(t.Context(), key).Val())
				}
			}
		})
	}
}

// waitQueued waits until n waiters are in key's Redis line.
func waitQueued(t *testing.T, rdb *redis.Client, key string, n int64) {
	t.Helper()
	line := script.Prefixed("golock_line", key)
	deadline := time.Now().Add(5 * time.Second)
	for rdb.LLen(t.Context(), line).Val() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters never queued in %s", n, line)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestReleaseAfterFallsBack: a release script Redis has forgotten (SCRIPT FLUSH) is sent again
// after the commands; a lock that cannot join a pipeline (reentrant here) executes it first and
// releases after. Either way the write is there and the lock is free.
func TestReleaseAfterFallsBack(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"lua", "fenced", "reentrant", "fair"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := newClientSet(t)
			rdb := srv.all[0]
			l, err := newNamed(mode, rdb, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			key := "{fallback}:lock:" + mode
			le, err := l.Acquire(t.Context(), key, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			p := rdb.Pipeline()
			set := p.Set(t.Context(), "{fallback}:data", mode, 0)
			if err := le.ReleaseAfter(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if set.Err() != nil || rdb.Get(t.Context(), "{fallback}:data").Val() != mode {
				t.Errorf("the write did not run: %v", set.Err())
			}
			if n := rdb.Exists(t.Context(), key).Val(); n != 0 {
				t.Errorf("the lock is still there after ReleaseAfter")
			}
		})
	}
}
