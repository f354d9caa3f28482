package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/lockutil"

	"seckill/lab/fault"
)

// The scenarios of row 15: holders of a semaphore's permits crash, on Redisson's RSemaphore
// (lock.NewSemaphore) and on its permit-expirable semaphore (lock.NewExpirableSemaphore), driven
// on the library directly. They sell nothing; their figures are their checks and notes.

func init() {
	register(Scenario{Name: "semaphore-crash", Row: 15, Short: "limit shrinks to 0", Mode: "semaphore", Library: true,
		Step: "step 15: RSemaphore",
		Expect: "3 holders of a 3-permit RSemaphore crash: one permit lost per crash, none back after 2 leases, " +
			"every later buyer kept out",
		Drive: driveSemaphoreCrash})
	register(Scenario{Name: "expirable-crash", Row: 15, Short: "permits back after a lease", Mode: "expirable", Library: true, Safe: true,
		Step: "step 15: RPermitExpirableSemaphore",
		Expect: "the same crashes on the expirable semaphore: every permit back one lease later, " +
			"later buyers all served, never over the limit",
		Drive: driveExpirableCrash})
}

// The semaphores' crowd: the limit, and the buyers that come after the crashes.
const (
	semPermits = 3
	semLater   = 6
)

// semaphoreOps is what both rows do with their kind: set the limit, count what is free, and make
// one process whose permit dies with it.
type semaphoreOps struct {
	set       func(ctx context.Context, n int) (bool, error)
	available func(ctx context.Context) (int, error)
	// crashHolder takes one permit in a new process, then kills the process.
	crashHolder func(ctx context.Context) error
	// buy takes a permit within wait, runs held while it holds it, gives it back; false when
	// none came.
	buy func(ctx context.Context, wait time.Duration, held func()) (bool, error)
}

func (e *Env) semaphoreLogger(process string) lock.Option {
	return lock.WithLogger(e.runner.log().With("process", process))
}

// aSemaphore is what both semaphores offer the rows besides taking a permit.
type aSemaphore interface {
	TrySetPermits(ctx context.Context, name string, n int) (bool, error)
	AvailablePermits(ctx context.Context, name string) (int, error)
	Close() error
}

// semaphoreOpsOf builds a kind's semaphoreOps: open makes one process's semaphore, and take
// takes one permit within wait (0: one attempt), answering what gives it back; ErrNotObtained
// when none came.
func semaphoreOpsOf[S aSemaphore](e *Env, open func(opts ...lock.Option) (S, error),
	take func(ctx context.Context, s S, name string, wait time.Duration) (func(context.Context) error, error)) (semaphoreOps, error) {
	name := e.kindKey()
	process := func(p string) (S, error) {
		s, err := open(e.semaphoreLogger(p))
		if err != nil {
			return s, fmt.Errorf("lab: %s semaphore for %s: %w", e.Scenario.Mode, p, err)
		}
		e.onClose(func() { _ = s.Close() }) // a subscription only
		return s, nil
	}
	shop, err := process("lab-shop")
	if err != nil {
		return semaphoreOps{}, err
	}
	holders := 0
	return semaphoreOps{
		set:       func(ctx context.Context, n int) (bool, error) { return shop.TrySetPermits(ctx, name, n) },
		available: func(ctx context.Context) (int, error) { return shop.AvailablePermits(ctx, name) },
		crashHolder: func(ctx context.Context) error {
			holders++
			s, err := process(fmt.Sprintf("lab-holder-%d", holders))
			if err != nil {
				return err
			}
			hctx, h := fault.Attach(ctx, fault.Plan{})
			if _, err := take(hctx, s, name, 0); err != nil {
				return fmt.Errorf("lab: holder %d took no permit: %w", holders, err)
			}
			h.Crash() // nothing of it reaches Redis from now on: an expirable permit's renewals fail
			return nil
		},
		buy: func(ctx context.Context, wait time.Duration, held func()) (bool, error) {
			release, err := take(ctx, shop, name, wait)
			if errors.Is(err, lock.ErrNotObtained) && ctx.Err() == nil {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			held()
			return true, release(context.WithoutCancel(ctx))
		},
	}, nil
}

// rsemaphore is Redisson's RSemaphore as the rows drive it.
func (e *Env) rsemaphore() (semaphoreOps, error) {
	open := func(opts ...lock.Option) (*lock.Semaphore, error) { return lock.NewSemaphore(e.Data, opts...) }
	return semaphoreOpsOf(e, open, func(ctx context.Context, s *lock.Semaphore, name string, wait time.Duration) (func(context.Context) error, error) {
		if err := s.Acquire(ctx, name, 1, wait); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return s.Release(ctx, name, 1) }, nil
	})
}

// expirable is the permit-expirable semaphore as the rows drive it, its permits renewed by a
// watchdog (no lease of their own) with the row's lease as its timeout.
func (e *Env) expirable() (semaphoreOps, error) {
	open := func(opts ...lock.Option) (*lock.ExpirableSemaphore, error) {
		return lock.NewExpirableSemaphore(e.Data, append(opts, lock.WithLease(e.Lease))...)
	}
	return semaphoreOpsOf(e, open, func(ctx context.Context, s *lock.ExpirableSemaphore, name string, wait time.Duration) (func(context.Context) error, error) {
		p, err := s.Acquire(ctx, name, wait, 0)
		if err != nil {
			return nil, err
		}
		return p.Release, nil
	})
}

// crashAll sets the limit, then lets semPermits holders each take a permit and crash, and
// answers the permits available after each crash and when the last one died.
func crashAll(ctx context.Context, e *Env, ops semaphoreOps) ([]int, time.Time, error) {
	if set, err := ops.set(ctx, semPermits); err != nil || !set {
		return nil, time.Time{}, fmt.Errorf("lab: set %d permits: %v, %w", semPermits, set, err)
	}
	var left []int
	for range semPermits {
		if err := ops.crashHolder(ctx); err != nil {
			return nil, time.Time{}, err
		}
		n, err := ops.available(ctx)
		if err != nil {
			return nil, time.Time{}, err
		}
		left = append(left, n)
	}
	return left, time.Now(), nil
}

// crowd runs semLater buyers at once, each waiting up to wait and holding its permit for work;
// it answers how many got one and the most that held one at once, as they counted.
func crowd(ctx context.Context, ops semaphoreOps, wait, work time.Duration) (got, most int64, err error) {
	var n, holding, peak atomic.Int64
	errs := make([]error, semLater)
	var wg sync.WaitGroup
	for k := range semLater {
		wg.Go(func() {
			ok, err := ops.buy(ctx, wait, func() {
				now := holding.Add(1)
				for m := peak.Load(); now > m && !peak.CompareAndSwap(m, now); m = peak.Load() {
				}
				lockutil.Sleep(ctx, work)
				holding.Add(-1)
			})
			if ok {
				n.Add(1)
			}
			errs[k] = err
		})
	}
	wg.Wait()
	return n.Load(), peak.Load(), errors.Join(errs...)
}

// countdown is what the permits left after each crash should read: one fewer each time.
func countdown() []int {
	var want []int
	for i := semPermits - 1; i >= 0; i-- {
		want = append(want, i)
	}
	return want
}

// driveSemaphoreCrash: three holders of an RSemaphore's three permits crash. Each crash takes a
// permit for good: after two leases (the expirable row's permits are back by then) none has come
// back, and six later buyers, each waiting a lease, all time out.
func driveSemaphoreCrash(ctx context.Context, e *Env) error {
	ops, err := e.rsemaphore()
	if err != nil {
		return err
	}
	left, _, err := crashAll(ctx, e, ops)
	if err != nil {
		return err
	}
	e.Check("permits left after each crash", fmt.Sprint(countdown()), fmt.Sprint(left), slices.Equal(left, countdown()))
	if !lockutil.Sleep(ctx, 2*e.Lease) {
		return ctx.Err()
	}
	n, err := ops.available(ctx)
	if err != nil {
		return err
	}
	e.Check(fmt.Sprintf("permits available %s after the last crash", ms(2*e.Lease)), "0", n, n == 0)
	got, _, err := crowd(ctx, ops, e.Lease, 5*time.Millisecond)
	if err != nil {
		return err
	}
	e.Check(fmt.Sprintf("later buyers that got a permit (each waited %s)", ms(e.Lease)), fmt.Sprintf("0 of %d", semLater),
		fmt.Sprintf("%d of %d", got, semLater), got == 0)
	e.SetDeadlock(n == 0 && got == 0)
	e.Note("the limit went %d → %v as the holders died, and stayed at %d: nothing records who holds an RSemaphore's permit",
		semPermits, left, n)
	return nil
}

// driveExpirableCrash: the same three crashes on the expirable semaphore, whose permits a
// watchdog renews every lease/3. Each crash takes a permit, as on the RSemaphore; one lease after
// the last crash every permit is back, and six later buyers are all served, never more than three
// at once.
func driveExpirableCrash(ctx context.Context, e *Env) error {
	ops, err := e.expirable()
	if err != nil {
		return err
	}
	left, crashed, err := crashAll(ctx, e, ops)
	if err != nil {
		return err
	}
	e.Check("permits left after each crash", fmt.Sprint(countdown()), fmt.Sprint(left), slices.Equal(left, countdown()))
	var n int
	back, err := waitFor(ctx, 3*e.Lease, 5*time.Millisecond, func() (bool, error) {
		var err error
		n, err = ops.available(ctx)
		return n == semPermits, err
	})
	if err != nil {
		return err
	}
	after := time.Since(crashed)
	// The last permit was taken just before its holder died: it ends one lease after that.
	e.Check("all permits back after the last crash", fmt.Sprintf("%d within %s-%s", semPermits, ms(e.Lease*2/3), ms(e.Lease*3/2)),
		fmt.Sprintf("%d after %s", n, ms(after)), back && after >= e.Lease*2/3 && after <= e.Lease*3/2)
	got, most, err := crowd(ctx, ops, 2*e.Lease, e.Lease/10)
	if err != nil {
		return err
	}
	e.Check(fmt.Sprintf("later buyers that got a permit (each waited up to %s)", ms(2*e.Lease)),
		fmt.Sprintf("%d of %d", semLater, semLater), fmt.Sprintf("%d of %d", got, semLater), got == semLater)
	e.Check("permits held at once, as the buyers counted", fmt.Sprintf("≤ %d", semPermits), most, most <= semPermits)
	end, err := ops.available(ctx)
	if err != nil {
		return err
	}
	e.Check("permits available at the end", fmt.Sprint(semPermits), end, end == semPermits)
	e.Note("the limit went %d → %v as the holders died, and was back to %d %s after the last crash",
		semPermits, left, n, after.Round(time.Millisecond))
	return nil
}
