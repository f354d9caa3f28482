package lock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testredis"
)

// Benchmarks of the acquire/release path on real redis-server processes (when installed), so
// that a regression in a lock's round trips or in its handoff shows in review:
//
//	go test -run '^$' -bench 'AcquireRelease' -benchtime 2s ./lock/
//
// serial: one holder, no contention: the cost of one acquire + release.
// parallel-own-key: many holders on distinct keys: throughput of the path itself.
// parallel-one-key: many holders on one key: the handoff between holders (what a seckill does).

// benchLease is long enough that no lock expires during a benchmark.
const benchLease = 30 * time.Second

func BenchmarkLuaAcquireRelease(b *testing.B) {
	c := testredis.Client(b, testredis.Start(b))
	l, err := newLua(Deps{Data: c, Lease: benchLease})
	if err != nil {
		b.Fatal(err)
	}
	benchAcquireRelease(b, l)
}

func BenchmarkRedlockAcquireRelease(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("masters=%d", n), func(b *testing.B) {
			clients := make([]*redis.Client, n)
			for i, s := range testredis.StartN(b, n) {
				clients[i] = testredis.Client(b, s)
			}
			l, err := newRedlock(Deps{Masters: testredis.Universal(clients...), Lease: benchLease})
			if err != nil {
				b.Fatal(err)
			}
			benchAcquireRelease(b, l)
		})
	}
}

func benchAcquireRelease(b *testing.B, l Locker) {
	ctx := context.Background()
	cycle := func(key string) error {
		lease, err := l.Acquire(ctx, key, Options{Wait: time.Minute, Lease: benchLease})
		if err != nil {
			return err
		}
		return lease.Release(ctx)
	}
	b.Run("serial", func(b *testing.B) {
		key := "{bench}:lock:serial:" + l.Name()
		for b.Loop() {
			if err := cycle(key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel-own-key", func(b *testing.B) {
		var next atomic.Int64
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("{bench}:lock:own:%s:%d", l.Name(), next.Add(1))
			for pb.Next() {
				if err := cycle(key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("parallel-one-key", func(b *testing.B) {
		key := "{bench}:lock:one:" + l.Name()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := cycle(key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
