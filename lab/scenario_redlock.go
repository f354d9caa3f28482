package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"seckill/lab/fault"
	"seckill/lock"
	"seckill/service"
)

// Where Redlock itself stops holding (row 9), and where its own check catches the pause.

func init() {
	register(Scenario{Name: "redlock-pause", Row: 9, LeaseFactor: 2, Short: "two holders after a pause", Mode: "redlock",
		Step: "Redlock algorithm; Kleppmann: a paused holder",
		Expect: "the holder pauses (a long GC) after it acquired, past the lock's validity: another buyer takes the lock, " +
			"both write, an update is lost",
		Drive: driveRedlockPause})
	register(Scenario{Name: "redlock-slow-acquire", Row: 9, LeaseFactor: 2, Short: "the lock refused", Mode: "redlock", Safe: true,
		Step: "Redlock algorithm: the elapsed-time check",
		Expect: "the pause falls between sending the SETs and reading their replies: the time taken eats the validity, " +
			"the lock is refused, and nobody holds it twice",
		Drive: driveRedlockSlowAcquire})
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
	key := e.LockKey(e.SKU)
	var a Outcome
	waitA := Go(func() { a = e.Buy(ctx, nil, 0, service.SaleRequest{Freeze: 2 * e.Lease}) })
	if err := e.WaitHeld(ctx, e.Masters[0], key); err != nil {
		waitA()
		return err
	}
	var waits []func()
	for k := range others {
		waits = append(waits, Go(func() { e.Buy(ctx, nil, k+1, service.SaleRequest{Work: 5 * time.Millisecond}) }))
	}
	waitA()
	for _, w := range waits {
		w()
	}
	inv, err := e.Snapshot(ctx, e.SKU)
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
		var le lock.Lease
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
	b := e.Buy(ctx, nil, 1, service.SaleRequest{Work: 5 * time.Millisecond})
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
