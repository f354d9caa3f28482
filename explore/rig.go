package explore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/redisproc"
	"seckill/lab/fault"
)

// The rig is the explorer's Redis servers, started once and reused by every trial (flushed
// between trials, restarted only when a fault needs it):
//
//   - the resource: the Redis holding the stock and the orders, the thing the lock protects. No
//     fault ever touches it, so what the buyers were told can be checked against it exactly;
//   - three lock masters m0, m1, m2: the single-instance modes keep their lock on m0, multilock
//     and redlock use all three. With redis-sentinel installed, m0 is a Sentinel-managed master
//     with one replica (what the failover fault needs), reached through Sentinel as the service
//     does with redis.sentinelMaster.
//
// Each of up to three service instances has its own connections to the masters, so a partition
// can cut one instance off.

//go:embed lua/clock_fast.lua
var clockFastLua string

var clockFastScript = redis.NewScript(clockFastLua)

// errPartitioned is what a partitioned instance's commands fail with.
var errPartitioned = errors.New("explore: partitioned from this master (injected)")

// maxInstances is how many service instances a schedule may use.
const maxInstances = 3

// Rig is the explorer's servers and clients.
type Rig struct {
	// Backend says which servers run: "redis-server" or "miniredis", and whether m0 is
	// Sentinel-managed.
	Backend string
	// Drawable lists the fault kinds this rig can inject.
	Drawable []string

	resource *redisproc.Server
	res      *redis.Client
	masters  [Masters]*redisproc.Server // masters[0] is nil when topo runs m0
	topo     *redisproc.Replicated
	admin    [Masters]redis.UniversalClient
	inst     [maxInstances]*instance
	// broken: the Sentinel topology was changed by a fault and must be rebuilt before the next trial.
	broken bool
	// spare is a second Sentinel topology started in the background, ready to replace the one
	// a failover used up (starting one takes about two seconds of waiting).
	spare chan spareTopo
	// injectStall is added to every trial's measured stall: a test's deterministic starvation.
	injectStall time.Duration
}

type spareTopo struct {
	topo *redisproc.Replicated
	err  error
}

// instance is one service instance's connections to the lock masters.
type instance struct {
	clients [Masters]redis.UniversalClient
	cut     [Masters]*cutHook
}

// RigOptions choose the rig's servers.
type RigOptions struct {
	// Embedded forces in-process servers even when redis-server is installed.
	Embedded bool
	// NoSentinel runs m0 as a plain server even when redis-sentinel is installed (no failover).
	NoSentinel bool
}

// NewRig starts the servers: real redis-server processes when installed (and not forced off),
// in-process ones otherwise.
func NewRig(ctx context.Context, opt RigOptions) (*Rig, error) {
	r := &Rig{}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	var err error
	if r.resource, err = redisproc.Start(redisproc.Options{Embedded: opt.Embedded}); err != nil {
		return nil, err
	}
	r.res = r.resource.Client()
	r.install(r.res)
	real := r.resource.Kind == redisproc.KindReal
	sentinel := real && !opt.NoSentinel && redisproc.SentinelInstalled()
	for m := range Masters {
		if m == 0 && sentinel {
			if err := r.startTopo(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if r.masters[m], err = redisproc.Start(redisproc.Options{Embedded: opt.Embedded}); err != nil {
			return nil, err
		}
		r.admin[m] = plainClient(r.masters[m].Addr)
	}
	for i := range r.inst {
		r.inst[i] = &instance{}
		for m := range Masters {
			r.connect(i, m)
		}
	}
	r.Backend = r.resource.Kind
	r.Drawable = []string{Crash, Pause, SlowReply, MasterRestartEmpty, ClockFast, Partition}
	if real {
		r.Drawable = append(r.Drawable, MasterDown)
	}
	if sentinel {
		r.Backend += " (m0 under Sentinel)"
		r.Drawable = append(r.Drawable, Failover)
	}
	r.Drawable = slices.DeleteFunc(slices.Clone(Catalogue), func(k string) bool { return !slices.Contains(r.Drawable, k) })
	ok = true
	return r, nil
}

// Undrawable lists the kinds of want this rig cannot inject, with why.
func (r *Rig) Undrawable(want []string) map[string]string {
	out := map[string]string{}
	for _, k := range want {
		if slices.Contains(r.Drawable, k) {
			continue
		}
		switch k {
		case MasterDown:
			out[k] = "an in-process Redis cannot be stopped (SIGSTOP needs a redis-server process)"
		case Failover:
			out[k] = "needs redis-server and redis-sentinel on PATH (apt: redis-server redis-sentinel)"
		default:
			out[k] = "not available here"
		}
	}
	return out
}

func (r *Rig) startTopo(ctx context.Context) error {
	var topo *redisproc.Replicated
	var err error
	if r.spare != nil {
		sp := <-r.spare
		topo, err = sp.topo, sp.err
	} else {
		topo, err = redisproc.StartReplicated(ctx, redisproc.ReplicatedOptions{Name: "explore"})
	}
	if err != nil {
		return fmt.Errorf("explore: start m0 under Sentinel: %w", err)
	}
	r.topo = topo
	r.admin[0] = r.sentinelClient()
	r.spare = make(chan spareTopo, 1)
	go func() {
		t, err := redisproc.StartReplicated(context.WithoutCancel(ctx), redisproc.ReplicatedOptions{Name: "explore"})
		r.spare <- spareTopo{t, err}
	}()
	return nil
}

// sentinelClient reaches m0 through Sentinel, with timeouts that follow the context.
func (r *Rig) sentinelClient() *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: r.topo.Name, SentinelAddrs: r.topo.SentinelAddrs(),
		PoolSize: 16, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second,
		WriteTimeout: time.Second, ContextTimeoutEnabled: true})
}

func plainClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true})
}

// connect (re)opens instance i's connection to master m, with the partition and fault hooks.
func (r *Rig) connect(i, m int) {
	in := r.inst[i]
	if in.clients[m] != nil {
		_ = in.clients[m].Close()
	}
	var c *redis.Client
	if m == 0 && r.topo != nil {
		c = r.sentinelClient()
	} else {
		c = plainClient(r.masters[m].Addr)
	}
	if in.cut[m] == nil {
		in.cut[m] = &cutHook{}
	}
	c.AddHook(in.cut[m])
	r.install(c)
	in.clients[m] = c
}

// install adds the holder-fault hooks: the lab's crash and pause, and the crash after a number
// of replies.
func (r *Rig) install(c *redis.Client) {
	fault.Install(c)
	c.AddHook(replyCrashHook{})
}

// server is the process of master m right now.
func (r *Rig) server(m int) *redisproc.Server {
	if m == 0 && r.topo != nil {
		return r.topo.Master
	}
	return r.masters[m]
}

// reset gets every server back to a clean start: continued, running, flushed, and the
// Sentinel topology rebuilt if a fault changed it.
func (r *Rig) reset(ctx context.Context) error {
	for _, in := range r.inst {
		for _, c := range in.cut {
			c.heal()
		}
	}
	if r.topo != nil {
		_ = r.topo.Replica.Resume() // only held back by a failover; continuing a running process is harmless
	}
	for m := range Masters {
		s := r.server(m)
		_ = s.Resume() // in-process servers cannot be paused: nothing to continue
		if err := s.Restart(); err != nil {
			return err
		}
	}
	if r.topo != nil && r.broken {
		if err := r.rebuildTopo(ctx); err != nil {
			return err
		}
	}
	var errs []error
	for _, c := range append([]redis.UniversalClient{r.res}, r.admin[:]...) {
		fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		errs = append(errs, c.FlushAll(fctx).Err())
		cancel()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("explore: flush between trials: %w", err)
	}
	return nil
}

// rebuildTopo replaces a Sentinel topology that a fault changed by a fresh one.
func (r *Rig) rebuildTopo(ctx context.Context) error {
	_ = r.admin[0].Close()
	r.topo.Close()
	if err := r.startTopo(ctx); err != nil {
		return err
	}
	for i := range r.inst {
		r.connect(i, 0)
	}
	r.broken = false
	return nil
}

// Close stops every server the rig started (by pid) and closes its clients.
func (r *Rig) Close() {
	for _, in := range r.inst {
		if in == nil {
			continue
		}
		for _, c := range in.clients {
			if c != nil {
				_ = c.Close()
			}
		}
	}
	for _, c := range r.admin {
		if c != nil {
			_ = c.Close()
		}
	}
	if r.res != nil {
		_ = r.res.Close()
	}
	if r.topo != nil {
		r.topo.Close()
	}
	if r.spare != nil {
		if sp := <-r.spare; sp.topo != nil {
			sp.topo.Close()
		}
	}
	for _, s := range r.masters {
		if s != nil {
			s.Close()
		}
	}
	if r.resource != nil {
		r.resource.Close()
	}
}

// cutHook fails every command while its instance is partitioned from its master.
type cutHook struct{ until atomic.Int64 }

func (h *cutHook) cutFor(d time.Duration) { h.until.Store(time.Now().Add(d).UnixNano()) }
func (h *cutHook) heal()                  { h.until.Store(0) }
func (h *cutHook) cut() bool              { return time.Now().UnixNano() < h.until.Load() }

func (h *cutHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cutHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut() {
			cmd.SetErr(errPartitioned)
			return errPartitioned
		}
		return next(ctx, cmd)
	}
}

func (h *cutHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.cut() {
			for _, c := range cmds {
				c.SetErr(errPartitioned)
			}
			return errPartitioned
		}
		return next(ctx, cmds)
	}
}

// replyCrash makes a holder die right after its n-th Redis reply: the command took effect, the
// holder never acts on its answer.
type replyCrash struct {
	left   atomic.Int32
	holder *fault.Holder
	mu     sync.Mutex
	at     time.Time
}

type replyCrashKey struct{}

func withReplyCrash(ctx context.Context, rc *replyCrash) context.Context {
	return context.WithValue(ctx, replyCrashKey{}, rc)
}

func (rc *replyCrash) reply() {
	if rc.left.Add(-1) == 0 {
		rc.mu.Lock()
		rc.at = time.Now()
		rc.mu.Unlock()
		rc.holder.Crash()
	}
}

func (rc *replyCrash) crashedAt() time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.at
}

type replyCrashHook struct{}

// handshake reports whether cmd is one go-redis sends by itself when it opens a connection
// (under the context of the command that needed it): not a reply the holder acts on.
func handshake(cmds ...redis.Cmder) bool {
	for _, c := range cmds {
		switch c.Name() {
		case "hello", "client", "auth", "select", "readonly":
		default:
			return false
		}
	}
	return true
}

func (replyCrashHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (replyCrashHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if rc, ok := ctx.Value(replyCrashKey{}).(*replyCrash); ok && !errors.Is(err, fault.ErrCrashed) && !handshake(cmd) {
			rc.reply()
		}
		return err
	}
}

func (replyCrashHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if rc, ok := ctx.Value(replyCrashKey{}).(*replyCrash); ok && !errors.Is(err, fault.ErrCrashed) && !handshake(cmds...) {
			rc.reply()
		}
		return err
	}
}
