package lock

import (
	"github.com/seckill-lab/seckill/lock/script"

	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// Benchmarks of the acquire/release path of every locked mode on real redis-server processes
// (when installed), so that a regression in a lock's round trips or in its handoff shows in
// review:
//
//	go test -run '^$' -bench 'AcquireRelease' -benchtime 2s ./lock/
//
// serial: one holder, no contention: the cost of one acquire + release (ns/op is the serial
// latency; the Redis commands it takes are reported as cmds/op).
// parallel-own-key: 8 holders on distinct keys: throughput of the path itself.
// one-key-8, one-key-50: 8 or 50 holders on one key: the handoff between holders (what a
// seckill does). ns/op should stay close to serial; cmds/op far above serial means waiters
// poll or stampede; the spread of acquisitions per holder is reported as jain (1 = fair).

// benchLease is long enough that no lock expires during a benchmark.
const benchLease = 30 * time.Second

func BenchmarkLuaAcquireRelease(b *testing.B) {
	c := locktest.NewClient(b, locktest.New(b))
	benchMode(b, "lua", []*redis.Client{c}, func() (*Locker, error) { return NewLua(c, WithLease(benchLease)) })
}

func BenchmarkReentrantAcquireRelease(b *testing.B) {
	c := locktest.NewClient(b, locktest.New(b))
	benchMode(b, "reentrant", []*redis.Client{c}, func() (*Locker, error) {
		return NewReentrant(c, WithLease(benchLease), WithInstanceID("bench"))
	})
}

func BenchmarkFencedAcquireRelease(b *testing.B) {
	c := locktest.NewClient(b, locktest.New(b))
	benchMode(b, "fenced", []*redis.Client{c}, func() (*Locker, error) { return NewFenced(c, WithLease(benchLease)) })
}

func BenchmarkMultilockAcquireRelease(b *testing.B) {
	clients := benchMasters(b, 3)
	benchMode(b, "multilock", clients, func() (*Locker, error) {
		return NewMultilock(universal(clients...), WithLease(benchLease), WithInstanceID("bench"))
	})
}

func BenchmarkRedlockAcquireRelease(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("masters=%d", n), func(b *testing.B) {
			clients := benchMasters(b, n)
			benchMode(b, "redlock", clients, func() (*Locker, error) { return NewRedlock(universal(clients...), WithLease(benchLease)) })
		})
	}
}

func benchMasters(b *testing.B, n int) []*redis.Client {
	clients := make([]*redis.Client, n)
	for i, s := range locktest.NewN(b, n) {
		clients[i] = locktest.NewClient(b, s)
	}
	return clients
}

// benchMode builds lock name with newLock and runs the sub-benchmarks; servers are the clients the
// lock talks through, whose commands (counted by a hook on them) give cmds/op.
func benchMode(b *testing.B, name string, servers []*redis.Client, newLock func() (*Locker, error)) {
	l, err := newLock()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Error(err)
		}
	})
	benchAcquireRelease(b, name, l, locktest.Count(servers...))
}

func benchAcquireRelease(b *testing.B, name string, l *Locker, calls *locktest.Counter) {
	ctx := context.Background()
	cycle := func(key string) error {
		lease, err := l.Acquire(ctx, key, Options{Wait: time.Minute, Lease: benchLease})
		if err != nil {
			return err
		}
		return lease.Release(ctx)
	}
	b.Run("serial", func(b *testing.B) {
		key := "{bench}:lock:serial:" + name
		calls.Reset()
		for b.Loop() {
			if err := cycle(key); err != nil {
				b.Fatal(err)
			}
		}
		reportCommands(b, calls)
	})
	b.Run("parallel-own-key", func(b *testing.B) {
		var next atomic.Int64
		calls.Reset()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("{bench}:lock:own:%s:%d", name, next.Add(1))
			for pb.Next() {
				if err := cycle(key); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportCommands(b, calls)
	})
	for _, holders := range []int{8, 50} {
		b.Run(fmt.Sprintf("one-key-%d", holders), func(b *testing.B) {
			benchOneKey(b, holders, "{bench}:lock:one:"+name, cycle, calls)
		})
	}
}

// benchOneKey runs b.N acquire/release cycles shared by holders goroutines on one key and
// reports the fairness of the split (Jain's index over the cycles each holder got).
func benchOneKey(b *testing.B, holders int, key string, cycle func(string) error, calls *locktest.Counter) {
	var left atomic.Int64
	left.Store(int64(b.N))
	got := make([]int64, holders)
	calls.Reset()
	b.ResetTimer()
	var wg sync.WaitGroup
	for h := range holders {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := cycle(key); err != nil {
					b.Error(err)
					return
				}
				got[h]++
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportCommands(b, calls)
	var sum, sq float64
	for _, n := range got {
		sum += float64(n)
		sq += float64(n) * float64(n)
	}
	if sq > 0 && b.N >= 10*holders {
		b.ReportMetric(sum*sum/(float64(holders)*sq), "jain")
	}
}

// reportCommands reports the commands the clients sent per op (a script counts once), the
// Redis-side cost of a cycle: extra tries and wake-ups show here.
func reportCommands(b *testing.B, calls *locktest.Counter) {
	b.Helper()
	if b.N > 0 {
		b.ReportMetric(float64(calls.Load())/float64(b.N), "cmds/op")
	}
}

// BenchmarkFairHandover is the fair lock's share of a contended sale, without the Go side: one
// holder releases to the first of 63 waiters queued from 16 processes (the release script takes
// the lock for it), and the old holder queues again at the tail (the acquire script), one op
// each. On redis-server it reports the server's CPU per op (INFO cpu, user + sys, the two
// scripts' network round trips included) and the commands the scripts ran inside Redis per op
// (INFO commandstats), which a longer script shows at once:
//
//	go test -run '^$' -bench FairHandover -benchtime 20000x ./lock/
func BenchmarkFairHandover(b *testing.B) {
	srv := locktest.New(b)
	rdb := locktest.NewClient(b, srv)
	ctx := context.Background()
	const key = "{bench}:lock:fair-handover"
	const waitMs, waiters = 5000, 64
	field := func(i int) string { return fmt.Sprintf("instance-%d:owner-%d", i%16, i) }
	join := func(i int) error {
		return run(ctx, rdb, script.Fair{LagCap: fairLagCap}.Acquire(key, field(i), benchLease.Milliseconds(), waitMs, time.Now().UnixMilli(),
			waitMs, true, waitMs, 0)).Err()
	}
	if err := rdb.HSet(ctx, key, field(0), 1).Err(); err != nil {
		b.Fatal(err)
	}
	for i := 1; i < waiters; i++ {
		if err := join(i); err != nil {
			b.Fatal(err)
		}
	}
	index := map[string]int{}
	for i := range waiters {
		index[field(i)] = i
	}
	before := serverStats(b, rdb)
	holder := 0
	for b.Loop() {
		r, err := run(ctx, rdb, script.Fair{ID: "elsewhere", LagCap: fairLagCap}.Release(key, field(holder), benchLease.Milliseconds(),
			time.Now().UnixMilli(), benchLease.Milliseconds(), waitMs)).Slice()
		if err != nil {
			b.Fatal(err)
		}
		next, ok := index[fmt.Sprint(r[1])]
		if len(r) != 2 || r[0] != int64(3) || !ok {
			b.Fatalf("release: %v, want {3, the first waiter}", r)
		}
		if err := join(holder); err != nil {
			b.Fatal(err)
		}
		holder = next
	}
	b.StopTimer()
	after := serverStats(b, rdb)
	if before.cpu >= 0 && b.N > 0 {
		b.ReportMetric((after.cpu-before.cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
		b.ReportMetric(float64(after.inner-before.inner)/float64(b.N), "calls-in-scripts/op")
	}
}

// serverStats reads redis-server's CPU seconds (user + sys) and the calls of every command but
// the script calls themselves; cpu is -1 where the server does not report them (miniredis).
func serverStats(b *testing.B, rdb *redis.Client) (s struct {
	cpu   float64
	inner int64
}) {
	b.Helper()
	s.cpu = -1
	ctx := context.Background()
	cpu, err := rdb.Info(ctx, "cpu").Result()
	if err != nil || !strings.Contains(cpu, "used_cpu_user:") {
		return s
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	s.cpu = 0
	for _, line := range strings.Split(cpu, "\n") {
		name, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		}
	}
	for _, line := range strings.Split(stats, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok || strings.HasPrefix(name, "eval") || strings.HasPrefix(name, "info") || strings.HasPrefix(name, "config") {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		s.inner += n
	}
	return s
}
