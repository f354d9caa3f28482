package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/lockutil"

	"seckill/internal/benchreport"
	"seckill/internal/redisproc"
)

// ClientCost is what one way of locking costs the process that uses it, per sale: a consumer's
// view, with no HTTP and no service in the way. Lockers lockers in one process (one Locker, or
// one redislock client, each with its own connection pool, as separate instances would have)
// run buyers goroutines each, all on one key of one Redis, for a while; every acquisition is
// one sale (acquire, then release).
type ClientCost struct {
	Name    string  `json:"name"`
	Sales   int64   `json:"sales"`
	PerSec  float64 `json:"salesPerSec"`
	CPUus   float64 `json:"cpuMicrosPerSale"` // the process's user + system CPU, per sale
	Allocs  float64 `json:"allocsPerSale"`    // heap allocations per sale
	Cmds    float64 `json:"cmdsPerSale"`      // commands sent per sale (a script counts once)
	Routine float64 `json:"goroutinesPerLocker"`
}

// CostLockers and CostBuyers are the shape of the measurement: 16 instances × 4 buyers.
const (
	CostLockers = 16
	CostBuyers  = 4
)

// CostNames are the ways measured: the library's lua and fenced locks, and redislock with the
// retry of its documented example (100 ms) and a faster one (10 ms).
var CostNames = []string{"lua", "fenced", RefRedislock100, RefRedislock10}

// MeasureClientCost runs name (one of CostNames) against the Redis at addr for d.
func MeasureClientCost(ctx context.Context, addr, name string, d time.Duration) (ClientCost, error) {
	cmds := &commandCounter{}
	clients, closeClients := openClients(addr, CostLockers, CostBuyers+2, cmds)
	defer closeClients()
	sales, closeAll, err := costSales(name, clients)
	if err != nil {
		return ClientCost{}, err
	}
	defer closeAll()
	key := "bench:cost:" + name
	if err := clients[0].Del(ctx, key).Err(); err != nil {
		return ClientCost{}, fmt.Errorf("bench: client cost of %s: %w", name, err)
	}
	base := runtime.NumGoroutine()
	var done atomic.Int64
	var peak atomic.Int64
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for _, sale := range sales {
		for range CostBuyers {
			wg.Go(func() {
				for ctx.Err() == nil {
					err := sale(ctx, key)
					switch {
					case err != nil && ctx.Err() != nil:
						return // the time is up
					case err != nil:
						select {
						case errs <- err:
						default:
						}
						cancel()
						return
					}
					if n := done.Add(1); n%64 == 0 {
						peak.Store(max(peak.Load(), int64(runtime.NumGoroutine())))
					}
				}
			})
		}
	}
	// The first quarter warms up: the Lockers' subscriptions, the pools' connections and the
	// crews start then, once per run, and a short run would count them as the sales' cost.
	lockutil.Sleep(ctx, d/4)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0, start, done0, cmds0 := cpuTime(), time.Now(), done.Load(), cmds.n.Load()
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	runtime.ReadMemStats(&m1)
	select {
	case err := <-errs:
		return ClientCost{}, fmt.Errorf("bench: client cost of %s: %w", name, err)
	default:
	}
	n := done.Load() - done0
	if n <= 0 {
		return ClientCost{}, fmt.Errorf("bench: client cost of %s: no sale in the %v after its warm-up", name, d-d/4)
	}
	buyers := int64(CostLockers * CostBuyers)
	return ClientCost{Name: name, Sales: n, PerSec: float64(n) / elapsed.Seconds(),
		CPUus:   float64(cpu.Microseconds()) / float64(n),
		Allocs:  float64(m1.Mallocs-m0.Mallocs) / float64(n),
		Cmds:    float64(cmds.n.Load()-cmds0) / float64(n),
		Routine: float64(max(peak.Load()-int64(base)-buyers, 0)) / CostLockers}, nil
}

// openClients dials n clients to addr, each with a pool of its own (an instance's connections),
// carrying hook when there is one; closeAll closes them.
func openClients(addr string, n, pool int, hook redis.Hook) (clients []*redis.Client, closeAll func()) {
	for range n {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool})
		if hook != nil {
			c.AddHook(hook)
		}
		clients = append(clients, c)
	}
	return clients, func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
}

// saleOnce is one sale of one instance: acquire the lock on key, release it.
type saleOnce func(ctx context.Context, key string) error

// costSales builds one sale per client for name, and what closes them.
func costSales(name string, clients []*redis.Client) ([]saleOnce, func(), error) {
	var sales []saleOnce
	var lockers []*lock.Locker
	closeAll := func() {
		for _, l := range lockers {
			l.Close()
		}
	}
	for _, c := range clients {
		switch name {
		case "lua", "fenced":
			newLock := lock.NewLua
			if name == "fenced" {
				newLock = lock.NewFenced
			}
			l, err := newLock(c, lock.WithLease(10*time.Second))
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			lockers = append(lockers, l)
			sales = append(sales, func(ctx context.Context, key string) error {
				le, err := l.Acquire(ctx, key, lock.Options{Wait: 30 * time.Second})
				if err != nil {
					return err
				}
				return le.Release(context.WithoutCancel(ctx))
			})
		case RefRedislock100, RefRedislock10:
			d := 100 * time.Millisecond
			if name == RefRedislock10 {
				d = 10 * time.Millisecond
			}
			rl, opt := redislock.New(c), &redislock.Options{RetryStrategy: redislock.LinearBackoff(d)}
			sales = append(sales, func(ctx context.Context, key string) error {
				l, err := rl.Obtain(ctx, key, 10*time.Second, opt)
				if errors.Is(err, redislock.ErrNotObtained) && ctx.Err() != nil {
					return nil
				}
				if err != nil {
					return err
				}
				return l.Release(context.WithoutCancel(ctx))
			})
		default:
			return nil, nil, fmt.Errorf("bench: client cost: unknown %q (known: %v)", name, CostNames)
		}
	}
	return sales, closeAll, nil
}

// cpuTime is the process's user + system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunClientCost measures every one of CostNames on a Redis of its own (redis-server when
// installed, unless embedded), rounds times each, the names alternated within a round so that a
// machine's slow moment falls on all of them alike; each figure is the median of its rounds.
func RunClientCost(ctx context.Context, rounds int, d time.Duration, embedded bool) (costs []ClientCost, server string, err error) {
	srv, err := redisproc.Start(redisproc.Options{Embedded: embedded})
	if err != nil {
		return nil, "", fmt.Errorf("bench: client cost: %w", err)
	}
	defer srv.Close()
	runs := map[string][]ClientCost{}
	for range max(rounds, 1) {
		for _, name := range CostNames {
			c, err := MeasureClientCost(ctx, srv.Addr, name, d)
			if err != nil {
				return nil, "", err
			}
			runs[name] = append(runs[name], c)
		}
	}
	for _, name := range CostNames {
		costs = append(costs, medianCost(runs[name]))
	}
	return costs, srv.Kind, nil
}

// medianCost is each figure's median over runs (sales summed).
func medianCost(runs []ClientCost) ClientCost {
	med := func(f func(ClientCost) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	c := ClientCost{Name: runs[0].Name}
	for _, r := range runs {
		c.Sales += r.Sales
	}
	c.PerSec = med(func(r ClientCost) float64 { return r.PerSec })
	c.CPUus = med(func(r ClientCost) float64 { return r.CPUus })
	c.Allocs = med(func(r ClientCost) float64 { return r.Allocs })
	c.Cmds = med(func(r ClientCost) float64 { return r.Cmds })
	c.Routine = med(func(r ClientCost) float64 { return r.Routine })
	return c
}

// CostTargets are the client-cost targets of costs, the figures of one run: a sale of lua and of
// fenced spends no more CPU, and makes no more heap allocations, than one of redislock-100ms.
// Against an in-process Redis they judge nothing (its work counts as the client's), so there are
// none.
func CostTargets(costs []ClientCost, server string) []benchreport.Target {
	if server != redisproc.KindReal {
		return nil
	}
	var ref *ClientCost
	for i := range costs {
		if costs[i].Name == RefRedislock100 {
			ref = &costs[i]
		}
	}
	if ref == nil {
		return nil
	}
	var ts []benchreport.Target
	for _, c := range costs {
		if c.Name != "lua" && c.Name != "fenced" {
			continue
		}
		for _, f := range []struct {
			what      string
			mine, its float64
		}{{"CPU", c.CPUus, ref.CPUus}, {"allocations", c.Allocs, ref.Allocs}} {
			if f.its <= 0 {
				continue
			}
			r := f.mine / f.its
			ts = append(ts, benchreport.Target{Name: fmt.Sprintf("%s ÷ %s %s a sale", c.Name, RefRedislock100, f.what),
				Want: "≤ 1", Ratio: r, Pass: r <= 1, Figures: fmt.Sprintf("%.1f / %.1f", f.mine, f.its)})
		}
	}
	return ts
}
