package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/lab/fault"

	"github.com/seckill-lab/seckill/lock/lockutil"

	"github.com/seckill-lab/seckill/lock"
)

// Where Redlock itself stops holding (row 9), and where its own check catches the pause.

func init() {
	register(Scenario{Name: "redlock-pause", Row: 9, LeaseFactor: 2, Short: "two holders after a pause", Mode: "redlock",
		Step: "step 9: Kleppmann, a pause",
		Expect: "the holder pauses (a long GC) after it acquired, past the lock's validity: another buyer takes the lock, " +
			"both write, an update is lost",
		Drive: driveRedlockPause})
	register(Scenario{Name: "redlock-slow-acquire", Row: 9, LeaseFactor: 2, Short: "the lock refused", Mode: "redlock", Safe: true,
		Step: "step 9: elapsed-time check",
		Expect: "the pause falls between sending the SETs and reading their replies: the time taken eats the validity, " +
			"the lock is refused, and nobody holds it twice",
		Drive: driveRedlockSlowAcquire})
	register(Scenario{Name: "redlock-restart", Row: 9, LeaseFactor: 3, Short: "two holders after a restart", Mode: "redlock",
		Step: "step 9: a master restarted empty",
		Expect: "a partition splits the masters; a master that granted A's lock restarts empty at once: " +
			"B takes a majority too, both write",
		Drive: driveRedlockRestart})
	register(Scenario{Name: "redlock-restart-aof", Row: 9, LeaseFactor: 2, Short: "none", Mode: "redlock", Safe: true,
		Step:   "step 9: appendfsync always",
		Expect: "the same restart on masters with appendfsync always: master 2 comes back with A's key, B gets no majority",
		Drive:  driveRedlockRestartAOF})
	register(Scenario{Name: "redlock-restart-delayed", Row: 9, LeaseFactor: 2, Short: "none", Mode: "redlock", Safe: true,
		Step:   "step 9: delayed restart",
		Expect: "the same restart without persistence, but master 2 stays down for the lease plus the drift: it comes back only when A's lock has expired everywhere",
		Drive:  driveRedlockRestartDelayed})
	register(Scenario{Name: "redlock-clock-jump", Row: 9, LeaseFactor: 2, Short: "two holders after a clock jump", Mode: "redlock",
		Step: "step 9: Kleppmann, a clock jump",
		Expect: "a partition splits the masters; one master's clock jumps and A's key there expires early: " +
			"B takes a majority too, both write (the jump is simulated by a short TTL)",
		Drive: driveRedlockClockJump})
	registerMode(Scenario{Name: "redlock-fenced", LeaseFactor: 2, Short: "two holders, stale write rejected", Mode: "redlock-fenced",
		Expect: "the clock jump of redlock-clock-jump, with a fencing token drawn from the masters: B's token is larger, " +
			"so A's later write is rejected as stale and no update is lost",
		Drive: driveRedlockFencedClockJump})
	register(Scenario{Name: "redlock-fenced-pause", Row: 10, LeaseFactor: 2, Short: "stale write rejected", Mode: "redlock-fenced", Safe: true,
		Step:   "step 10: tokens, a pause",
		Expect: "the paused holder of redlock-pause, with fencing tokens: its write after the pause is rejected as stale",
		Drive:  driveFenced})
	register(Scenario{Name: "redlock-fenced-restart", Row: 10, LeaseFactor: 3, Short: "equal tokens, both write", Mode: "redlock-fenced",
		Step: "step 10: tokens, a restart",
		Expect: "the restart of redlock-restart, with fencing tokens: master 2 forgets the token counter with the key, " +
			"B draws the same token as A, and both writes are accepted",
		Drive: driveRedlockFencedRestart})
}

// driveRedlockPause: A acquires the Redlock on three masters and pauses, watchdog and all, for
// two leases between its last check of the lock and its write. Its keys expire on every master;
// the other buyers take the lock in turn and sell; then A wakes and writes what it read before.
// Redlock has no token the write could carry: the update is lost (row 10's fence is the cure).
func driveRedlockPause(ctx context.Context, e *Env) error {
	const stock, others = 20, 4
	if err := e.NewFleet(ctx, 6*e.Lease, stock); err != nil {
		return err
	}
	if len(e.Masters) == 0 {
		return errors.New("lab: redlock needs masters")
	}
	a, inv, err := pausedHolder(ctx, e, e.Masters[0], others)
	if err != nil {
		return err
	}
	e.Check("paused holder A's write", "sold (nothing stops it)", a.Kind, a.Kind == "sold")
	e.Check("overlaps (A still inside when another buyer got the lock)", "> 0", inv.Overlaps, inv.Overlaps > 0)
	e.Check("lost updates", "> 0", inv.LostUpdates, inv.LostUpdates > 0)
	return nil
}

// driveRedlockSlowAcquire: A sends its SET NX to the three masters, which all grant it, but A is
// paused for one and a half leases before it reads each reply. When it reads them, the time
// taken exceeds the lock's validity (lease − elapsed − drift < 0), so Redlock refuses the lock
// and deletes what it set. Meanwhile B waits, takes the lock once A's keys expire, and sells.
func driveRedlockSlowAcquire(ctx context.Context, e *Env) error {
	const stock = 10
	if err := e.NewFleet(ctx, 8*e.Lease, stock); err != nil {
		return err
	}
	if len(e.Masters) == 0 {
		return errors.New("lab: redlock needs masters")
	}
	key := e.LockKey(e.SKU)
	l, err := e.Fleet.Locker(0, "redlock")
	if err != nil {
		return err
	}
	pause := e.Lease * 3 / 2
	actx, _ := fault.Attach(ctx, fault.Plan{PauseAfterReply: pause})
	var aErr error
	var aTook time.Duration
	waitA := Go(func() {
		start := time.Now()
		var le modes.Lease
		// One attempt: the wait ends before a second one could start.
		le, aErr = l.Acquire(actx, key, lock.Options{Wait: e.Lease})
		aTook = time.Since(start)
		if aErr == nil {
			aErr = errors.New("A got the lock")
			_ = le.Release(context.WithoutCancel(ctx))
		}
	})
	if err := e.WaitHeld(ctx, e.Masters[0], key); err != nil {
		waitA()
		return err
	}
	b := e.Buy(ctx, nil, 1, Request{Work: 5 * time.Millisecond})
	waitA()
	e.Check("A, paused "+ms(pause)+" before reading the masters' replies", "refused (not obtained)",
		fmt.Sprint(aErr), errors.Is(aErr, lock.ErrNotObtained))
	e.Note("A's acquisition took %s against a lease of %s: master 1 held A's key meanwhile, but the validity was spent "+
		"before A read the replies", aTook.Round(time.Millisecond), e.Lease)
	e.Check("B, waiting meanwhile", "sold", b.Kind, b.Kind == "sold")
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	safeChecks(e, inv, 1, false)
	return nil
}

// driveRedlockClockJump: Kleppmann's case. Three masters; a partition lets A reach masters 1
// and 2 only, and B masters 2 and 3 only. A takes the lock on 1 and 2, a majority. Then master
// 2's clock jumps forward and A's key there expires early; the lab simulates the jump by
// shortening that key's TTL to 1 ms (PEXPIRE), which is what the jump does to it. B now gets
// masters 2 and 3, a majority too: two holders, and both write.
func driveRedlockClockJump(ctx context.Context, e *Env) error {
	_, live, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	return twoMajorities(ctx, e, live, "the clock jump on master 2", clockJump(ctx, e, live[1]), bothWrite)
}

// clockJump is a forward jump of a master's clock, as the lock key sees it: its TTL there ends
// now (PEXPIRE 1 ms).
func clockJump(ctx context.Context, e *Env, master redis.UniversalClient) func() error {
	return func() error {
		err := master.PExpire(ctx, e.LockKey(e.SKU), time.Millisecond).Err()
		time.Sleep(5 * time.Millisecond) // the millisecond passes
		return err
	}
}

// driveRedlockFencedClockJump: the clock jump again, with mode redlock-fenced. B's token comes
// from a counter that A raised on master 2, so it is larger than A's; B writes first (A is still
// in its business time), and the store refuses A's write with the older token.
func driveRedlockFencedClockJump(ctx context.Context, e *Env) error {
	_, live, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	return twoMajorities(ctx, e, live, "the clock jump on master 2", clockJump(ctx, e, live[1]), staleRejected)
}

// driveRedlockFencedRestart: the restart without persistence again, with mode redlock-fenced.
// Master 2 comes back without A's key and without the token counter A raised there; B reads
// the counters of masters 2 and 3, neither of which knows A's token, and draws the same one.
// The store accepts a token equal to the newest (one holder may write more than once), so both
// writes land: the fence is only as durable as its counter.
func driveRedlockFencedRestart(ctx context.Context, e *Env) error {
	srv, live, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	return twoMajorities(ctx, e, live, "restart master 2 without persistence", restartNow(srv[1]), sameToken)
}

// driveRedlockRestart: the same partition; instead of a clock jump, master 2 restarts at once
// without persistence and comes back empty, forgetting A's key. B takes masters 2 and 3.
func driveRedlockRestart(ctx context.Context, e *Env) error {
	srv, live, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	return twoMajorities(ctx, e, live, "restart master 2 without persistence", restartNow(srv[1]), bothWrite)
}

// restartNow stops s and starts it again at once, on the same port (empty, unless it keeps an
// append-only file).
func restartNow(s *redisproc.Server) func() error {
	return func() error {
		s.Stop()
		return s.Restart()
	}
}

// driveRedlockRestartDelayed: the Redis documentation's other cure. Master 2 restarts without
// persistence, but only after the longest lease plus the drift: by then every lock it could have
// granted has expired on the other masters too, so B cannot form a majority with a lock A may
// still hold.
// redlockDrift is the library's default clock-drift factor for Redlock (redsync's, 0.01), which
// the lab's modes use.
const redlockDrift = 0.01

func driveRedlockRestartDelayed(ctx context.Context, e *Env) error {
	srv, live, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	down := e.Lease + time.Duration(float64(e.Lease)*redlockDrift) + 2*time.Millisecond
	return twoMajorities(ctx, e, live, "restart master 2 after the lease plus the drift ("+ms(down)+")", func() error {
		srv[1].Stop()
		if !lockutil.Sleep(ctx, down) {
			return ctx.Err()
		}
		return srv[1].Restart()
	}, noSecondHolder)
}

// driveRedlockRestartAOF: the same restart, on masters that write every command to their
// append-only file before answering (appendfsync always): master 2 comes back with A's key and
// its TTL, so B finds only master 3 free and must wait.
func driveRedlockRestartAOF(ctx context.Context, e *Env) error {
	if !redisproc.UseReal() {
		return fmt.Errorf("%w: needs redis-server (apt install redis-server): the in-process Redis keeps nothing across a restart", ErrSkipped)
	}
	srv, live, err := e.ownMastersWith(3, []string{"--appendonly", "yes", "--appendfsync", "always"})
	if err != nil {
		return err
	}
	return twoMajorities(ctx, e, live, "restart master 2 with appendfsync always", restartNow(srv[1]), keyKept)
}

// splitOutcome is what twoMajorities expects of B, who reaches masters 2 and 3, once the fault
// has hit master 2 while A holds masters 1 and 2.
type splitOutcome int

const (
	bothWrite      splitOutcome = iota // B gets a majority too; both write; an update is lost
	staleRejected                      // B gets a majority with a larger token; A's later write is refused
	sameToken                          // B gets a majority and A's token; both writes land, an update is lost
	noSecondHolder                     // B gets no majority while A holds
	keyKept                            // as noSecondHolder, and master 2 still has A's key after the fault
)

// twoMajorities is Kleppmann's partition on three masters: A reaches masters 1 and 2 only, B
// masters 2 and 3 only. A takes the lock on 1 and 2, a majority; then fault happens to master 2,
// and B tries for 2 and 3 while A is still in its business time. want says what must follow.
func twoMajorities(ctx context.Context, e *Env, live []redis.UniversalClient, what string, fault func() error, want splitOutcome) error {
	const stock = 10
	// Sets the stock and clears the lock keys on the three masters, all reachable here.
	if err := e.newFleetOn(ctx, live, 4*e.Lease, stock); err != nil {
		return err
	}
	cut, err := unreachable()
	if err != nil {
		return err
	}
	e.closers = append(e.closers, func() { _ = cut.Close() })
	// B waits less than A's lease: without a second majority it must give up while A holds.
	sideA, err := e.buildFleet(e.SKU, e.Data, []redis.UniversalClient{live[0], live[1], cut}, 4*e.Lease, stock)
	if err != nil {
		return err
	}
	sideB, err := e.buildFleet(e.SKU, e.Data, []redis.UniversalClient{cut, live[1], live[2]}, e.Lease/2, stock)
	if err != nil {
		return err
	}
	key := e.LockKey(e.SKU)
	// A's business time (half the lease) outlasts the fault (a real redis-server takes 100 ms or
	// more to restart on a loaded machine, which is why the two restart rows take three Runner
	// leases, not two: with 300 ms, B's sale after the restart, token reads and all, once came
	// after A's write under -race beside the other runners) and B's sale, and ends before A's watchdog gives up on
	// its failed extension (it retries while the lease lasts), so A never learns that its
	// majority is gone.
	var a Outcome
	work := e.Lease / 2
	waitA := Go(func() { a = e.Buy(ctx, sideA, 0, Request{Work: work}) })
	if err := e.WaitInside(ctx, e.SKU); err != nil {
		waitA()
		return err
	}
	inside := time.Now()
	if err := fault(); err != nil {
		waitA()
		return fmt.Errorf("lab: %s: %w", what, err)
	}
	// The row's design: the fault falls within A's business time (and so within what A's key
	// has left of its lease). A machine too slow for that, as a real redis-server restarting
	// under load can be, leaves the row undecided rather than failed or passed. (Only the
	// delayed restart, noSecondHolder, outlasts A's business time by design.)
	if want != noSecondHolder {
		e.Slow(what, time.Since(inside), work)
	}
	kept, err := live[1].Exists(ctx, key).Result()
	if err != nil {
		kept = -1 // a connection broken by the restart; the check below says so
	}
	b := e.Buy(ctx, sideB, 1, Request{Work: 5 * time.Millisecond})
	waitA()
	if want != noSecondHolder && want != keyKept {
		// and B, who sells, is done before A writes
		e.Slow(what+" and B's sale", b.End.Sub(inside), work)
	}
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	switch want {
	case bothWrite, staleRejected, sameToken:
		e.Check("A's key on master 2 after "+what, "gone (0)", kept, kept == 0)
		e.Check("B (masters 2 and 3), while A still held its lock", "sold", b.Kind, b.Kind == "sold")
		e.Check("overlaps (two holders)", "> 0", inv.Overlaps, inv.Overlaps > 0)
	}
	switch want {
	case bothWrite:
		e.Check("A (masters 1 and 2)", "sold", a.Kind, a.Kind == "sold")
		e.Check("lost updates", "> 0", inv.LostUpdates, inv.LostUpdates > 0)
	case sameToken:
		e.Check("A's token vs B's", "equal", fmt.Sprintf("%d vs %d", a.Token, b.Token), a.Token > 0 && a.Token == b.Token)
		e.Check("A (masters 1 and 2), writing after B", "sold (the equal token passes)", a.Kind, a.Kind == "sold")
		e.Check("lost updates", "> 0", inv.LostUpdates, inv.LostUpdates > 0)
	case staleRejected:
		e.Check("A's token vs B's", "A's older", fmt.Sprintf("%d vs %d", a.Token, b.Token), a.Token > 0 && a.Token < b.Token)
		e.Check("A (masters 1 and 2), writing after B", "rejected as stale", a.Kind, a.Kind == "stale")
		e.Check("stale writes rejected in Redis", "1", inv.StaleRejected, inv.StaleRejected == 1)
		safeChecks(e, inv, 1, true)
	case noSecondHolder, keyKept:
		e.Check("A (masters 1 and 2)", "sold", a.Kind, a.Kind == "sold")
		if want == keyKept {
			e.Check("A's key on master 2 after "+what, "still there (1)", kept, kept == 1)
		}
		// B gets no majority while A holds; it may sell once A has released.
		e.Note("B: %s", b.Kind)
		safeChecks(e, inv, int64(e.Count("sold")), false)
	}
	return nil
}

// newFleetOn builds the main fleet on the given masters instead of the Runner's.
func (e *Env) newFleetOn(ctx context.Context, masters []redis.UniversalClient, wait time.Duration, stock int64) error {
	f, err := e.newFleet(ctx, e.SKU, e.Data, masters, wait, stock)
	if err != nil {
		return err
	}
	e.Fleet = f
	return nil
}

// unreachable is a client of an address nobody listens on: a master on the other side of a
// partition (each command fails at once, connection refused).
func unreachable() (redis.UniversalClient, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lab: find a free port for the partition: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return nil, err
	}
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 50 * time.Millisecond}), nil
}
