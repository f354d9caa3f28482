package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestKeys: every key a lock leaves in Redis, while held with waiters in two processes, while
// handed over from one to the next and after the last release, is among Locker.Keys, for every
// kind; deleting Keys leaves nothing behind.
func TestKeys(t *testing.T) {
	t.Parallel()
	// enlisted is how many keys exist once the waiters of another process have joined the
	// kind's line in Redis (the kinds that keep none there have nothing more to wait for).
	enlisted := map[string]int{"lua": 3, "fenced": 4, "reentrant": 3, "fair": 3}
	for _, k := range conformanceKinds {
		if k.cluster {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			n := 1
			if k.masters {
				n = 3
			}
			var cs []redis.UniversalClient
			for _, s := range locktest.NewN(t, n) {
				cs = append(cs, locktest.NewClient(t, s))
			}
			build := func() *lock.Locker {
				l, err := k.build(cs[0], cs, k.opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				return l
			}
			a, b := build(), build()
			const name = "{sku}:lock:keys"
			listed := a.Keys(name)
			if !slices.Contains(listed, name) || !slices.Equal(listed, b.Keys(name)) {
				t.Fatalf("Keys(%q) = %q (other Locker %q): want the lock key, the same on both", name, listed, b.Keys(name))
			}
			var mu sync.Mutex
			seen := map[string]bool{}
			snapshot := func() int {
				count := 0
				for _, c := range cs {
					keys, err := c.Keys(context.Background(), "*").Result()
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					for _, key := range keys {
						seen[key] = true
					}
					mu.Unlock()
					count = max(count, len(keys))
				}
				return count
			}

			// The lock is free; the wait only lets a busy machine try again (a Redlock attempt
			// gives each master 50 ms, and lost one so: "token counter read on 0 of 3 masters").
			held, err := a.Acquire(t.Context(), name, lock.Options{Wait: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, w := range []*lock.Locker{b, b, a} {
				wg.Go(func() {
					le, err := w.Acquire(context.Background(), name, lock.Options{Wait: 20 * time.Second})
					if err != nil {
						t.Errorf("waiter: %v", err)
						return
					}
					snapshot()
					if err := le.Release(context.Background()); err != nil {
						t.Errorf("waiter's release: %v", err)
					}
				})
			}
			if want := enlisted[k.name]; want > 0 {
				deadline := time.Now().Add(10 * time.Second)
				for snapshot() < want {
					if time.Now().After(deadline) {
						t.Fatalf("the waiters never joined the line: %d keys of %d", snapshot(), want)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			snapshot()
			if err := held.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			snapshot()

			for key := range seen {
				if !slices.Contains(listed, key) {
					t.Errorf("key %q was in Redis but not in Keys(%q) = %q", key, name, listed)
				}
			}
			t.Logf("%s: seen %d of %d listed keys", k.name, len(seen), len(listed))
			for _, c := range cs {
				if err := c.Del(context.Background(), listed...).Err(); err != nil {
					t.Fatal(err)
				}
				if left := c.Keys(context.Background(), "*").Val(); len(left) > 0 {
					t.Errorf("left after deleting Keys: %q", left)
				}
			}
		})
	}
}
