package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/store"

	"github.com/seckill-lab/seckill/lock/lockutil"

	"github.com/seckill-lab/seckill/lock"
)

// Row 12 of docs/lab.md: the reentrant lock on a replicated master managed by Sentinel
// (the failover that the Redis lock page warns about:
// https://redis.io/docs/latest/develop/use/patterns/distributed-locks/). Each run starts its own topology (one master, one
// replica, three sentinels with a 500 ms down-after and a 2 s failover timeout, real processes on
// free loopback ports, stopped by pid), so the lab never kills a server it did not start. Two
// service instances A and B reach the master only through Sentinel, as the service does with
// redis.sentinelMaster.

// failoverLease is the lease of the row-12 locks: the library's default (Redisson's default
// watchdog timeout, 30 s). It is far longer than a failover, so no lock expires during the
// scenario: when B gets the lock, it is only because the promoted replica never had A's.
var failoverLease = (*lock.Locker)(nil).DefaultLease()

// failoverStock is the stock each row-12 experiment starts with.
const failoverStock = 10

func init() {
	register(Scenario{Name: "failover", Row: 12, Mode: "reentrant", Step: "step 12: Sentinel failover",
		Short: "two holders after failover",
		Expect: "A locks on the master; replication is held back; the master is killed and Sentinel promotes " +
			"the replica, which never saw the lock; B acquires too: two holders at once, a lost update",
		Drive: driveFailover})
	register(Scenario{Name: "failover-wait", Row: 12, Mode: "reentrant", Step: "step 12: failover, WAIT 1",
		Safe: true, Short: "never two holders (WAIT 1)",
		Expect: "lock.waitReplicas=1 (WAIT after acquiring): with replication held back A's acquisition is " +
			"refused and undone; acknowledged, A's lock survives the failover and B must wait: never two holders",
		Drive: driveFailoverWait})
}

// failoverInstance is one simulated service instance on the Sentinel-managed data Redis.
type failoverInstance struct {
	name   string
	rdb    *redis.Client
	locker modes.Locker
	st     *store.Store
}

// failoverRig is one Sentinel topology and the two instances A and B on it.
type failoverRig struct {
	topo *redisproc.Replicated
	a, b *failoverInstance
	sku  string
	key  string
}

// newFailoverRig starts a topology, builds A and B (both with lock.waitReplicas = wait), puts
// failoverStock into sku and waits until the replica has it. It returns an ErrSkipped error when
// redis-sentinel is not installed or outages are off.
func (e *Env) newFailoverRig(ctx context.Context, sku string, wait int) (*failoverRig, error) {
	if e.runner.NoOutages {
		return nil, fmt.Errorf("%w: outages are off (the scenario kills a master it starts itself)", ErrSkipped)
	}
	if !redisproc.SentinelInstalled() {
		return nil, fmt.Errorf("%w: needs redis-server and redis-sentinel on PATH (apt: redis-server redis-sentinel)", ErrSkipped)
	}
	topo, err := redisproc.StartReplicated(ctx, redisproc.ReplicatedOptions{})
	if err != nil {
		return nil, fmt.Errorf("lab: start master, replica and sentinels: %w", err)
	}
	// Closers run last first: the instances close before the topology stops.
	e.closers = append(e.closers, topo.Close)
	r := &failoverRig{topo: topo, sku: sku, key: store.LockKey(sku, "reentrant")}
	for _, name := range []string{"A", "B"} {
		c := topo.FailoverClient()
		e.closers = append(e.closers, func() { _ = c.Close() })
		reg, err := modes.NewRegistry(modes.Deps{Data: c, InstanceID: uuid.NewString(), Options: []lock.Option{
			lock.WithLogger(e.runner.log().With("instance", "lab-"+name)),
			lock.WithReplicas(wait, 0).Optional()}})
		if err != nil {
			return nil, fmt.Errorf("lab: lock registry for %s: %w", name, err)
		}
		e.closers = append(e.closers, func() { _ = reg.Close() })
		l, _, err := reg.Locker("reentrant")
		if err != nil {
			return nil, err
		}
		in := &failoverInstance{name: "lab-" + name, rdb: c, locker: l, st: store.New(c)}
		if name == "A" {
			r.a = in
		} else {
			r.b = in
		}
	}
	if err := r.a.st.Reset(ctx, sku, failoverStock); err != nil {
		return nil, fmt.Errorf("lab: reset %s on the Sentinel master: %w", sku, err)
	}
	e.stockSet(sku, failoverStock)
	// The stock itself must be on the replica before anything is held back.
	rep := topo.Replica.Client()
	defer rep.Close()
	ok, err := waitFor(ctx, 5*time.Second, 10*time.Millisecond, func() (bool, error) {
		v, err := rep.Get(ctx, sku).Result()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return v == fmt.Sprint(failoverStock), err
	})
	if err != nil || !ok {
		return nil, fmt.Errorf("lab: the replica did not get %s within 5s: %v", sku, err)
	}
	return r, nil
}

// failover kills the master (SIGKILL), resumes the replica if it was held back, and waits until
// every sentinel names the replica as the master and both instances reach it. It returns how
// long the promotion took.
func (r *failoverRig) failover(ctx context.Context, heldBack bool) (time.Duration, error) {
	start := time.Now()
	r.topo.Master.Stop()
	if heldBack {
		if err := r.topo.Replica.Resume(); err != nil {
			return 0, err
		}
	}
	if err := r.topo.WaitMaster(ctx, r.topo.Replica.Addr, 30*time.Second); err != nil {
		return 0, fmt.Errorf("lab: Sentinel did not promote the replica: %w", err)
	}
	took := time.Since(start)
	// A pooled connection to the dead master fails once; after that the clients ask Sentinel.
	for _, in := range []*failoverInstance{r.a, r.b} {
		ok, err := waitFor(ctx, 10*time.Second, 20*time.Millisecond, func() (bool, error) {
			return in.rdb.Ping(ctx).Err() == nil, nil
		})
		if err != nil || !ok {
			return took, fmt.Errorf("lab: %s does not reach the new master: %v", in.name, err)
		}
	}
	return took, nil
}

// holdsOn reports whether field is in the lock hash on the server at addr.
func holdsOn(ctx context.Context, addr, key, field string) (bool, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	ok, err := c.HExists(ctx, key, field).Result()
	if err != nil {
		return false, fmt.Errorf("lab: HEXISTS %s on %s: %w", key, addr, err)
	}
	return ok, nil
}

// acquire takes the lock for owner through in, retrying while the client is still finding the
// new master after a failover (bounded).
func (in *failoverInstance) acquire(ctx context.Context, key, owner string, wait time.Duration) (modes.Lease, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		le, err := in.locker.Acquire(ctx, key, lock.Options{Wait: wait, Lease: failoverLease, Owner: owner})
		if err == nil || !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotReplicated) ||
			time.Now().After(deadline) {
			return le, err
		}
		if !lockutil.Sleep(ctx, 50*time.Millisecond) {
			return nil, err
		}
	}
}

// enter marks in as inside the critical section and reads the stock, as service.Sale does.
func (in *failoverInstance) enter(ctx context.Context, sku string) (int64, error) {
	if err := in.st.EnterSection(ctx, sku, in.name, time.Minute); err != nil {
		return 0, err
	}
	return in.st.Stock(ctx, sku)
}

// sell writes stock-1 with an order, unless the lease says the lock was lost, and leaves.
func (in *failoverInstance) sell(ctx context.Context, sku string, stock int64, le modes.Lease) (bool, error) {
	defer func() { _ = in.st.LeaveSection(context.WithoutCancel(ctx), sku, in.name) }()
	if isDone(le.Lost()) {
		return false, nil
	}
	_, err := in.st.Commit(ctx, sku, stock-1, store.Order{ID: uuid.NewString(), Instance: in.name, Mode: "reentrant"})
	return err == nil, err
}

// driveFailover is row 12 without waiting for replicas: the replica is paused and its link
// dropped before A acquires, so A's lock exists only on the master; the master is killed, the
// replica resumed and promoted, and B, through Sentinel, finds no lock. Then both holders do
// what a holder does: enter, read the stock, write it minus one.
func driveFailover(ctx context.Context, e *Env) error {
	e.res.LeaseMs = failoverLease.Milliseconds()
	r, err := e.newFailoverRig(ctx, e.SKU, 0)
	if err != nil {
		return err
	}
	if err := r.topo.HoldBackReplication(ctx); err != nil {
		return err
	}
	aStart := time.Now() // A's sale, for the history, runs from its acquire to its write
	la, err := r.a.acquire(ctx, r.key, "A", 0)
	e.Check("A acquires on the master (replica paused, its link dropped)", "held", errText(err), err == nil)
	if err != nil {
		return nil
	}
	aAt := time.Now()
	field := la.(modes.HashLease).Field()
	on, err := holdsOn(ctx, r.topo.Master.Addr, r.key, field)
	if err != nil {
		return err
	}
	e.Check("A's lock on the master", "present", on, on)
	took, err := r.failover(ctx, true)
	if err != nil {
		return err
	}
	e.Note("master killed; Sentinel promoted the replica %s in %s", r.topo.Replica.Addr, took.Round(time.Millisecond))
	on, err = holdsOn(ctx, r.topo.Replica.Addr, r.key, field)
	if err != nil {
		return err
	}
	e.Check("A's lock on the promoted replica", "absent (it never got there)", on, !on)

	bStart := time.Now()
	lb, err := r.b.acquire(ctx, r.key, "B", 2*time.Second)
	bAt := time.Now()
	e.Check("B acquires the same lock through Sentinel", "held", errText(err), err == nil)
	if err != nil {
		return nil
	}
	aLost := isDone(la.Lost())
	left := failoverLease - bAt.Sub(aAt)
	holders := 1
	if !aLost && left > 0 {
		holders++
	}
	e.Check("holders at once when B acquired (A not released, not told of a loss, lease left)", "2",
		fmt.Sprintf("%d (A's lease left %s)", holders, left.Round(time.Millisecond)), holders == 2)

	// Both holders in the critical section: both read the same stock and write it minus one.
	sa, errA := r.a.enter(ctx, r.sku)
	sb, errB := r.b.enter(ctx, r.sku)
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	soldB, errB := r.b.sell(ctx, r.sku, sb, lb)
	e.record("lab-B", bStart, soldB, sb-1)
	soldA, errA := r.a.sell(ctx, r.sku, sa, la)
	e.record("lab-A", aStart, soldA, sa-1)
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	if err := lb.Release(ctx); err != nil {
		return fmt.Errorf("lab: B's release: %w", err)
	}
	relA := la.Release(ctx)
	e.Check("A's release, its only sign of trouble", "not held (its lock vanished with the old master)", errText(relA),
		errors.Is(relA, lock.ErrNotHeld))
	inv, err := r.b.st.Snapshot(ctx, r.sku)
	if err != nil {
		return err
	}
	e.setFigures(inv)
	e.Check("overlaps (both inside at once)", "> 0", inv.Overlaps, inv.Overlaps > 0)
	e.Check("lost updates (both wrote the same stock minus one)", "> 0", inv.LostUpdates, inv.LostUpdates > 0)
	return nil
}

// driveFailoverWait is row 12 with lock.waitReplicas=1, in two parts on two topologies. Held
// back: A's acquisition gets no acknowledgement, is undone and fails; after the failover (the
// old master back as a replica) B sells alone. Acknowledged: A's lock reaches the replica
// before A relies on it, survives the failover, B must wait, and A's release still finds it.
func driveFailoverWait(ctx context.Context, e *Env) error {
	e.res.LeaseMs = failoverLease.Milliseconds()
	r, err := e.newFailoverRig(ctx, e.SKU, 1)
	if err != nil {
		return err
	}
	if err := r.topo.HoldBackReplication(ctx); err != nil {
		return err
	}
	aStart := time.Now()
	_, err = r.a.acquire(ctx, r.key, "A", 0)
	e.record("lab-A", aStart, false, 0)
	e.Check("held back: A's acquisition (WAIT 1: no replica can acknowledge)", "refused and undone",
		errText(err), errors.Is(err, lock.ErrNotReplicated))
	n, err := redisExists(ctx, r.topo.Master.Addr, r.key)
	if err != nil {
		return err
	}
	e.Check("held back: lock key left on the master after the refusal", "0", n, n == 0)
	took, err := r.failover(ctx, true)
	if err != nil {
		return err
	}
	e.Note("held back: Sentinel promoted the replica in %s", took.Round(time.Millisecond))
	// The old master comes back empty as a replica of the new one, so WAIT 1 can be met again.
	if err := r.rejoinOldMaster(ctx); err != nil {
		return err
	}
	bStart := time.Now()
	lb, err := r.b.acquire(ctx, r.key, "B", 2*time.Second)
	e.Check("held back: B acquires after the failover (acknowledged by the rejoined replica)", "held", errText(err), err == nil)
	if err != nil {
		return nil
	}
	sb, err := r.b.enter(ctx, r.sku)
	if err != nil {
		return err
	}
	soldB, err := r.b.sell(ctx, r.sku, sb, lb)
	if err != nil {
		return err
	}
	e.record("lab-B", bStart, soldB, sb-1)
	if err := lb.Release(ctx); err != nil {
		return fmt.Errorf("lab: B's release: %w", err)
	}
	inv, err := r.b.st.Snapshot(ctx, r.sku)
	if err != nil {
		return err
	}
	e.setFigures(inv)
	e.Check("held back: sold (B alone)", "1", inv.Sold, inv.Sold == 1)
	e.Check("held back: lost updates", "0", inv.LostUpdates, inv.LostUpdates == 0)
	e.Check("held back: overlaps", "0", inv.Overlaps, inv.Overlaps == 0)

	// Acknowledged: the same with a replica that keeps up.
	r2, err := e.newFailoverRig(ctx, e.SKU+"-acked", 1)
	if err != nil {
		return err
	}
	mark := e.PhaseMark()
	la, err := r2.a.acquire(ctx, r2.key, "A", 0)
	e.Check("acknowledged: A acquires (the replica acknowledged)", "held", errText(err), err == nil)
	if err != nil {
		return nil
	}
	field := la.(modes.HashLease).Field()
	took, err = r2.failover(ctx, false)
	if err != nil {
		return err
	}
	e.Note("acknowledged: Sentinel promoted the replica in %s", took.Round(time.Millisecond))
	on, err := holdsOn(ctx, r2.topo.Replica.Addr, r2.key, field)
	if err != nil {
		return err
	}
	e.Check("acknowledged: A's lock on the promoted replica", "present", on, on)
	wait := time.Second
	_, errB := r2.b.acquire(ctx, r2.key, "B", wait)
	e.phaseRecord("lab-B", false)
	e.Check(fmt.Sprintf("acknowledged: B while A holds (waits %s)", wait), "not obtained", errText(errB),
		errors.Is(errB, lock.ErrNotObtained))
	sa, err := r2.a.enter(ctx, r2.sku)
	if err != nil {
		return err
	}
	soldA, err := r2.a.sell(ctx, r2.sku, sa, la)
	if err != nil {
		return err
	}
	e.phaseRecord("lab-A", soldA)
	relA := la.Release(ctx)
	e.Check("acknowledged: A's release after the failover", "ok (its lock survived)", errText(relA), relA == nil)
	inv2, err := r2.b.st.Snapshot(ctx, r2.sku)
	if err != nil {
		return err
	}
	p := Phase{Name: "replica acknowledged, master killed while A held the lock", SKU: r2.sku, Sold: inv2.Sold,
		Initial: inv2.InitialStock, Lost: inv2.LostUpdates, Overlaps: inv2.Overlaps, Outcomes: map[string]int{}}
	e.mu.Lock()
	for _, o := range e.phaseOut[mark:] {
		p.Outcomes[o.Kind]++
	}
	e.mu.Unlock()
	e.res.Phases = append(e.res.Phases, p)
	e.Check("acknowledged: sold (A alone)", "1", inv2.Sold, inv2.Sold == 1)
	e.Check("acknowledged: lost updates", "0", inv2.LostUpdates, inv2.LostUpdates == 0)
	return nil
}

// rejoinOldMaster restarts the killed master, empty, as a replica of the promoted one, and waits
// until the new master counts it.
func (r *failoverRig) rejoinOldMaster(ctx context.Context) error {
	if err := r.topo.Master.Restart(); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(r.topo.Replica.Addr)
	c := r.topo.Master.Client()
	defer c.Close()
	if err := c.ReplicaOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("lab: REPLICAOF on the old master: %w", err)
	}
	n := r.topo.Replica.Client()
	defer n.Close()
	ok, err := waitFor(ctx, 10*time.Second, 20*time.Millisecond, func() (bool, error) {
		info, err := n.Info(ctx, "replication").Result()
		return err == nil && containsAll(info, "connected_slaves:1", "state=online"), nil
	})
	if err != nil || !ok {
		return fmt.Errorf("lab: the old master did not rejoin as a replica within 10s: %v", err)
	}
	return nil
}

func redisExists(ctx context.Context, addr, key string) (int64, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	n, err := c.Exists(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("lab: EXISTS %s on %s: %w", key, addr, err)
	}
	return n, nil
}

// setFigures fills the result's figures from a snapshot (the row-12 SKU lives on the scenario's
// own Sentinel master, not on the runner's data Redis).
func (e *Env) setFigures(inv store.Inventory) {
	e.res.Sold, e.res.Initial, e.res.Stock = inv.Sold, inv.InitialStock, inv.Stock
	e.res.Lost, e.res.Oversold, e.res.Overlaps = inv.LostUpdates, inv.Oversold, inv.Overlaps
	e.res.ForeignUnlocks, e.res.StaleRejected = inv.ForeignUnlocks, inv.StaleRejected
}

// record counts a holder of the main experiment as a buyer (sold with remaining stock left, or
// refused), whose sale started at start and answers now.
func (e *Env) record(instance string, start time.Time, sold bool, remaining int64) {
	o := Outcome{Instance: instance, Kind: soldKind(sold), Start: start, End: time.Now()}
	if sold {
		o.Remaining = remaining
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.outcomes = append(e.outcomes, o)
}

// phaseRecord counts a buyer of a phase.
func (e *Env) phaseRecord(instance string, sold bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.phaseOut = append(e.phaseOut, Outcome{Instance: instance, Kind: soldKind(sold)})
}

func soldKind(sold bool) string {
	if sold {
		return "sold"
	}
	return "refused"
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func isDone(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
