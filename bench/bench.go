// Package bench is `seckill bench`: it starts its own Redis servers (one data Redis and three
// masters, real redis-server processes when installed), sells one key under every safe lock mode
// and under reference strategies built from their libraries (redsync, a classic spin tryLock
// (SET NX EX, sleep 100 ms, retry), bsm/redislock at two retry intervals), at several crowd sizes, and
// reports throughput, latency, fairness, lost updates and the commands its clients send per sale
// (counted by a go-redis hook, the same on redis-server and miniredis) next to the serial bound
// that the measured Redis round-trip time implies, with the performance targets checked as
// ratios of figures measured in the same run.
package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/benchreport"
	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/service"
	"seckill/store"
)

// Options of one bench run. Zero values mean the defaults below.
type Options struct {
	// Duration is the measured time of each cell (strategy × crowd size).
	Duration time.Duration
	// Warmup runs before each cell's measurement and is not counted.
	Warmup time.Duration
	// Concurrency lists the crowd sizes (buyers at once on the one key).
	Concurrency []int
	// Rounds splits each cell's Duration into this many windows, run up and down the crowd
	// sizes (1, 8, 50, 50, 8, 1), so slow changes in the machine's load cancel out of the ratios.
	Rounds int
	// Strategies names what to run (modes and references); empty means all.
	Strategies []string
	// Instances lists how many service instances the buyers are spread over (buyer b on
	// instance b mod n); each instance has its own Redis clients (connections, pub/sub), lock
	// registry and reference lock clients, as a separate process would. Empty means 1.
	Instances []int
	// Lease is the lock lease of the lock modes (their watchdog timeout where they have one),
	// and the TTL the redislock references obtain their lock with.
	Lease time.Duration
	// Wait bounds how long a buyer waits for a lock (lock.wait; the spin reference's
	// tryExpirseTime; the context of redislock's Obtain).
	Wait time.Duration
	// Embedded forces in-process Redis servers (miniredis) even when redis-server is installed.
	Embedded bool
	// Progress, if set, is told about each cell as it ends.
	Progress func(done, total int, c Cell)
	// RoundDone, if set, is told as each round ends (every cell is reported after the last).
	RoundDone func(round, rounds int)
	Log       *slog.Logger
}

// DefaultLease is the lock library's default lease (Redisson's lockWatchdogTimeout).
var DefaultLease = (*lock.Locker)(nil).DefaultLease()

// Defaults. 10 strategies × 3 crowd sizes × (5 s + 2 × 0.3 s of warm-up) is about 2 min 50 s,
// inside a 3 min budget.
const (
	DefaultDuration = 5 * time.Second
	DefaultWarmup   = 300 * time.Millisecond
	DefaultRounds   = 2
	DefaultWait     = 10 * time.Second
	// benchStock never runs out: even the fastest strategy sells far less in a cell.
	benchStock = int64(1) << 40
	benchSKU   = "bench001"
	grace      = time.Second
)

// DefaultConcurrency is 1, 8 and 50 buyers.
var DefaultConcurrency = []int{1, 8, 50}

func (o *Options) defaults() {
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Rounds <= 0 {
		o.Rounds = DefaultRounds
	}
	if len(o.Instances) == 0 {
		o.Instances = []int{1}
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Names lists every strategy the bench knows, in table order.
func Names() []string {
	var out []string
	for _, s := range strategies() {
		out = append(out, s.Name)
	}
	return out
}

// ErrUnknownStrategy is returned for a strategy name the bench does not know.
var ErrUnknownStrategy = errors.New("bench: unknown strategy")

func selectStrategies(names []string) ([]Strategy, error) {
	all := strategies()
	if len(names) == 0 {
		return all, nil
	}
	var out []Strategy
	for _, s := range all {
		if slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	for _, n := range names {
		if !slices.Contains(Names(), n) {
			return nil, fmt.Errorf("%w %q; known: %s", ErrUnknownStrategy, n, strings.Join(Names(), ", "))
		}
	}
	return out, nil
}

// Estimate is how long a run with these options takes at least.
func (o Options) Estimate() time.Duration {
	o.defaults()
	n := len(o.Strategies)
	if n == 0 {
		n = len(strategies())
	}
	return time.Duration(n*len(o.Concurrency)*len(o.Instances)) * (time.Duration(o.Rounds)*o.Warmup + o.Duration)
}

// env is what the bench shares across a strategy's instances: the Redis servers' addresses,
// the audit and reset, and the command counter.
type env struct {
	data  redis.UniversalClient // the bench's own client: resets, audits, INFO
	store *store.Store
	svc   *service.Service // resets the stock between rounds
	sku   string
	wait  time.Duration
	// lease is the lock modes' lease, and the TTL of the redislock references.
	lease time.Duration
	// counter counts the commands every instance's clients send.
	counter *commandCounter
	// open dials a client to one of the servers (0: data, 1..3: masters) for one instance,
	// with a pool of the given size, carrying the counter.
	open  func(server, pool int) *redis.Client
	addrs []string
	log   *slog.Logger
	opt   Options
}

// instance is one service instance of a cell, as a separate process would have it: its own
// clients (so its own connections and subscriptions), its own lock registry (its own instance id,
// waiters' lines and pub/sub connection), its own store and service.
type instance struct {
	data    redis.UniversalClient
	masters []redis.UniversalClient
	store   *store.Store
	reg     *modes.Registry
	svc     *service.Service
}

// newInstances builds n instances for a crowd of at most buyers; close ends them.
func (e *env) newInstances(n, buyers int) (ins []*instance, closeAll func(), err error) {
	var closers []func() error
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil {
				e.log.Warn("bench: close an instance", "err", err)
			}
		}
	}
	// Every buyer of the instance may hold a connection while its script runs, plus watchdog
	// renewals and the multi-master fan-out.
	pool := 2*((buyers+n-1)/n) + 16
	for range n {
		in := &instance{data: e.open(0, pool)}
		closers = append(closers, in.data.Close)
		for i := 1; i < len(e.addrs); i++ {
			m := e.open(i, pool)
			closers = append(closers, m.Close)
			in.masters = append(in.masters, m)
		}
		in.reg, err = modes.NewRegistry(modes.Deps{Data: in.data, Masters: in.masters, InstanceID: uuid.NewString(),
			Options: e.opt.lockOptions()})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("bench: %w", err)
		}
		closers = append(closers, in.reg.Close)
		in.store = store.New(in.data)
		in.svc = service.New(in.store, in.reg, e.svc.Settings(), nil, e.log)
		ins = append(ins, in)
	}
	return ins, closeAll, nil
}

// Run starts the Redis servers, runs every selected strategy at every crowd size and returns the
// report. It stops only the servers it started.
func Run(ctx context.Context, opt Options) (Report, error) {
	opt.defaults()
	list, err := selectStrategies(opt.Strategies)
	if err != nil {
		return Report{}, err
	}
	for _, c := range opt.Concurrency {
		if c < 1 || c > 10_000 {
			return Report{}, fmt.Errorf("bench: concurrency %d is out of range 1..10000", c)
		}
	}
	rep := Report{Started: time.Now(), Machine: machine(), Concurrency: opt.Concurrency, WaitQuantileP: WaitQuantileP,
		DurationMs: opt.Duration.Milliseconds(), WarmupMs: opt.Warmup.Milliseconds(), Rounds: opt.Rounds,
		LeaseMs: opt.Lease.Milliseconds()}

	// One data Redis and three independent masters, as in the demo topology of docs/operations.md.
	var servers []*redisproc.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for range 4 {
		s, err := redisproc.Start(redisproc.Options{Embedded: opt.Embedded})
		if err != nil {
			return rep, fmt.Errorf("bench: %w", err)
		}
		servers = append(servers, s)
	}
	rep.Redis.Kind = servers[0].Kind
	for _, s := range servers {
		rep.Redis.Addrs = append(rep.Redis.Addrs, s.Addr)
	}

	// Every client the bench creates carries the command counter, so cmds/sale is what they
	// send, counted the same way on redis-server and on miniredis.
	counter := &commandCounter{}
	open := func(server, pool int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: servers[server].Addr, PoolSize: pool, MinIdleConns: min(pool, 8),
			MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
		c.AddHook(counter)
		return c
	}
	data := open(0, 16)
	defer data.Close()
	var masters []redis.UniversalClient
	for i := 1; i < len(servers); i++ {
		m := open(i, 4)
		defer m.Close()
		masters = append(masters, m)
	}
	rep.Redis.Version = redisVersion(ctx, data)
	rep.Redis.RTT, err = measureRTT(ctx, data, 3000)
	if err != nil {
		return rep, err
	}

	reg, err := modes.NewRegistry(modes.Deps{Data: data, Masters: masters, InstanceID: uuid.NewString(),
		Options: opt.lockOptions()})
	if err != nil {
		return rep, fmt.Errorf("bench: %w", err)
	}
	defer reg.Close()
	st := store.New(data)
	e := &env{data: data, store: st, sku: benchSKU, wait: opt.Wait, lease: opt.Lease, counter: counter,
		open: open, addrs: rep.Redis.Addrs, log: opt.Log, opt: opt,
		svc: service.New(st, reg, service.Settings{
			Instance: "bench", SKU: benchSKU, Stock: benchStock, Mode: "atomic",
			Wait: opt.Wait, MaxStock: benchStock, TrackOverlap: false,
		}, nil, opt.Log)}

	total := len(list) * len(opt.Concurrency) * len(opt.Instances)
	w := timing{warmup: opt.Warmup, dur: opt.Duration / time.Duration(opt.Rounds), grace: grace}
	all := append([]redis.UniversalClient{data}, masters...)
	// Every round visits every strategy at every instance count, so that a change in the
	// machine's background load (this is a shared, noisy machine) weighs on every cell alike:
	// the targets compare cells of different strategies and instance counts, and each of them is
	// the sum of windows spread over the whole run.
	acc := make([][][]window, len(list))
	for i := range acc {
		acc[i] = make([][]window, len(opt.Instances))
		for j := range acc[i] {
			acc[i][j] = make([]window, len(opt.Concurrency))
		}
	}
	for r := range opt.Rounds {
		for i, s := range list {
			for j, n := range opt.Instances {
				if err := e.runRound(ctx, r, s, n, w, all, acc[i][j]); err != nil {
					return rep, err
				}
			}
		}
		if opt.RoundDone != nil {
			opt.RoundDone(r+1, opt.Rounds)
		}
	}
	for i, s := range list {
		for j, n := range opt.Instances {
			cells, err := e.cells(s, n, acc[i][j], rep.Redis.RTT.Median)
			for _, c := range cells {
				rep.Cells = append(rep.Cells, c)
				if opt.Progress != nil {
					opt.Progress(len(rep.Cells), total, c)
				}
			}
			if err != nil {
				return rep, err
			}
		}
	}
	if _, err := e.svc.Reset(context.WithoutCancel(ctx), e.sku, 0); err != nil {
		opt.Log.Warn("bench: final reset", "err", err)
	}
	rep.Targets = checkTargets(rep.Cells, opt.Concurrency, opt.Instances)
	rep.ElapsedMs = time.Since(rep.Started).Milliseconds()
	return rep, nil
}

// runRound runs round r of one strategy with its buyers spread over n instances (built for this
// round, as separate processes would be) at every crowd size, adding each to acc.
func (e *env) runRound(ctx context.Context, r int, s Strategy, n int, w timing, all []redis.UniversalClient, acc []window) error {
	ins, closeAll, err := e.newInstances(n, slices.Max(e.opt.Concurrency))
	if err != nil {
		return err
	}
	defer closeAll()
	sales := make([]saleFunc, n)
	for i, in := range ins {
		sales[i] = s.build(e, in)
	}
	sale := func(ctx context.Context, buyer int) error { return sales[buyer%n](ctx, buyer) }
	conc := e.opt.Concurrency
	// Rounds go up and down the crowd sizes (1, 8, 50, then 50, 8, 1, ...) for the same reason.
	for j := range conc {
		i := j
		if r%2 == 1 {
			i = len(conc) - 1 - j
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.measure(ctx, &acc[i], conc[i], n, w, sale, all); err != nil {
			return fmt.Errorf("bench: %s × %d on %d instances: %w", s.Name, conc[i], n, err)
		}
	}
	return nil
}

// cells turns the windows of one strategy on n instances into its cells, one per crowd size.
func (e *env) cells(s Strategy, n int, acc []window, rtt time.Duration) ([]Cell, error) {
	var cells []Cell
	for i, b := range e.opt.Concurrency {
		a := &acc[i]
		slices.Sort(a.stats.latencies)
		c := newCell(s, b, n, a.stats, a.inv, rtt)
		if a.inv.Sold > 0 {
			if a.calls == 0 {
				// A sale sends commands; none counted means the counter is not on the clients
				// the sale used, and a 0 in the table would be a lie.
				return cells, fmt.Errorf("bench: %s × %d: %d sold but no command counted", s.Name, b, a.inv.Sold)
			}
			c.CommandsPerSale = float64(a.calls) / float64(a.inv.Sold)
			c.ClientCPUPerSaleUs = float64(a.clientCPU.Microseconds()) / float64(a.inv.Sold)
			if a.redisCPUKnown {
				c.RedisCPUPerSaleUs = float64(a.redisCPU.Microseconds()) / float64(a.inv.Sold)
			}
		}
		c.RedisCPUUnknown = !a.redisCPUKnown
		c.BusyPct = 100 * (a.clientCPU + a.redisCPU).Seconds() / (a.wall.Seconds() * float64(runtime.NumCPU()))
		cells = append(cells, c)
	}
	return cells, nil
}

// window accumulates the rounds of one cell.
type window struct {
	stats cellStats
	inv   store.Inventory // sold, lost updates and oversold summed over the rounds
	// calls counts the commands the bench's clients sent during the rounds (commandCounter).
	calls               int64
	clientCPU, redisCPU time.Duration
	// redisCPUKnown: every server reported its CPU in every round (INFO cpu; miniredis does
	// not, and runs inside this process, so its CPU is in clientCPU).
	redisCPUKnown bool
	rounds        int
	wall          time.Duration
}

// measure runs one round of a cell on a freshly reset stock and adds it to acc.
func (e *env) measure(ctx context.Context, acc *window, n, instances int, w timing, sale saleFunc, all []redis.UniversalClient) error {
	if _, err := e.svc.Reset(ctx, e.sku, benchStock); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	redis0, ok0 := redisCPU(ctx, all)
	// The count starts after the reset and the bench's INFO, so it holds only what the buyers
	// (and the locks' background work: watchdogs, handoff) send during the round.
	e.counter.reset()
	cpu0, wall0 := processCPU(), time.Now()
	st := runCell(ctx, n, instances, w, sale)
	calls := e.counter.load()
	after := context.WithoutCancel(ctx)
	cpu1 := processCPU()
	redis1, ok1 := redisCPU(after, all)
	acc.wall += time.Since(wall0)
	acc.calls += calls
	inv, err := e.store.Snapshot(after, e.sku)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	acc.clientCPU += cpu1 - cpu0
	acc.redisCPUKnown = (acc.rounds == 0 || acc.redisCPUKnown) && ok0 && ok1
	if acc.redisCPUKnown {
		acc.redisCPU += redis1 - redis0
	}
	acc.rounds++
	acc.inv.Sold += inv.Sold
	acc.inv.LostUpdates += inv.LostUpdates
	acc.inv.Oversold += inv.Oversold
	acc.stats.merge(st)
	return nil
}

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU time the servers have used so far (INFO cpu); ok is false when a server
// cannot tell (miniredis has no cpu section: it runs inside this process, so its CPU shows in
// processCPU instead).
func redisCPU(ctx context.Context, cs []redis.UniversalClient) (d time.Duration, ok bool) {
	var total float64
	for _, c := range cs {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, false
		}
		found := 0
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, false
				}
				total += f
				found++
			}
		}
		if found != 2 {
			return 0, false
		}
	}
	return time.Duration(total * float64(time.Second)), true
}

// measureRTT times n PINGs one after the other, after a few unmeasured ones.
func measureRTT(ctx context.Context, c redis.UniversalClient, n int) (RTT, error) {
	for range 200 {
		if err := c.Ping(ctx).Err(); err != nil {
			return RTT{}, fmt.Errorf("bench: PING: %w", err)
		}
	}
	d := make([]time.Duration, n)
	for i := range d {
		t := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return RTT{}, fmt.Errorf("bench: PING: %w", err)
		}
		d[i] = time.Since(t)
	}
	slices.Sort(d)
	return RTT{Median: percentile(d, 0.5), P99: percentile(d, 0.99), Samples: n}, nil
}

func redisVersion(ctx context.Context, c redis.UniversalClient) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version(), CPU: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// Write prints the report as text (w) or JSON.
func Write(w io.Writer, rep Report, asJSON bool) error {
	if asJSON {
		return benchreport.WriteJSON(w, rep)
	}
	return writeTable(w, rep)
}

// lockOptions are the lock library's options of the lock modes: the lease and the log.
func (o Options) lockOptions() []lock.Option {
	return []lock.Option{lock.WithLease(o.Lease), lock.WithLogger(o.Log)}
}
