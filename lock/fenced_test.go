package lock_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// layout is one of NewFenced's layouts: its options and where it keeps its token counter.
type layout struct {
	opts    []lock.Option
	counter func(key string) string
}

// forEachLayout runs test on the default layout and on RFencedLock's: both keep every promise
// of a fenced lock.
func forEachLayout(t *testing.T, test func(*testing.T, layout)) {
	t.Run("line", func(t *testing.T) {
		test(t, layout{counter: func(key string) string { return key + ":token" }})
	})
	t.Run("rfencedlock", func(t *testing.T) {
		test(t, layout{opts: []lock.Option{lock.WithRFencedLockLayout()},
			counter: func(key string) string { return "redisson_lock_token:" + key }}) // key has a hash tag
	})
}

// fencedSetup starts a Redis server and builds a fenced lock of that layout on it with the given
// default lease; its client carries the fault hook.
func fencedSetup(t *testing.T, lease time.Duration, lay layout) (*lock.Locker, *redis.Client) {
	t.Helper()
	c := locktest.NewClient(t, locktest.New(t))
	locktest.Install(c)
	l, err := lock.NewFenced(c, append([]lock.Option{lock.WithLease(lease), lock.WithInstanceID("test")}, lay.opts...)...)
	if err != nil {
		t.Fatalf("NewFenced: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, c
}

// pttl is the raw PTTL reply: -1 means the key has no TTL, -2 that it does not exist.
func pttl(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(t.Context(), "pttl", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

func exists(t *testing.T, c *redis.Client, key string) bool {
	t.Helper()
	n, err := c.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

func TestFencedTokensStrictlyIncrease(t *testing.T) {
	t.Parallel()
	forEachLayout(t, testFencedTokensStrictlyIncrease)
}

func testFencedTokensStrictlyIncrease(t *testing.T, lay layout) {
	const lease = time.Second
	l, c := fencedSetup(t, lease, lay)
	ctx := t.Context()
	key := "{t}:lock:fenced"

	var last int64
	for i := range 3 {
		a, err := l.Acquire(ctx, key, lock.Options{Lease: lease})
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if a.Token() <= last {
			t.Fatalf("acquire %d: token %d, not above the previous %d", i, a.Token(), last)
		}
		last = a.Token()
		if err := a.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}

	// Concurrent buyers: the holders, in the order they held the lock, see increasing tokens,
	// and never two at once.
	const buyers = 20
	var (
		mu      sync.Mutex
		order   []int64
		inside  atomic.Int32
		overlap atomic.Int32
		wg      sync.WaitGroup
		errs    = make(chan error, buyers)
	)
	for range buyers {
		wg.Go(func() {
			a, err := l.Acquire(ctx, key, lock.Options{Wait: 10 * time.Second, Lease: lease})
			if err != nil {
				errs <- err
				return
			}
			if inside.Add(1) > 1 {
				overlap.Add(1)
			}
			mu.Lock()
			order = append(order, a.Token())
			mu.Unlock()
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			if err := a.Release(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("buyer: %v", err)
	}
	if overlap.Load() != 0 {
		t.Errorf("%d overlaps between fenced holders", overlap.Load())
	}
	if len(order) != buyers {
		t.Fatalf("%d holders, want %d", len(order), buyers)
	}
	for i, tok := range order {
		if tok <= last {
			t.Fatalf("holder %d got token %d, not above %d: %v", i, tok, last, order)
		}
		last = tok
	}
	if n, err := c.Get(ctx, lay.counter(key)).Int64(); err != nil || n != last {
		t.Fatalf("token counter = %d (%v), want the last token %d", n, err, last)
	}
}

func TestFencedWatchdogKeepsLockThroughThreeLeases(t *testing.T) {
	t.Parallel()
	forEachLayout(t, testFencedWatchdogKeepsLockThroughThreeLeases)
}

func testFencedWatchdogKeepsLockThroughThreeLeases(t *testing.T, lay layout) {
	const lease = 300 * time.Millisecond
	l, c := fencedSetup(t, lease, lay)
	ctx := t.Context()
	key := "{t}:lock:fenced"

	a, err := l.Acquire(ctx, key, lock.Options{Lease: lease, Wait: setupWait})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	time.Sleep(3 * lease) // business time of three leases
	// A renewal is due every lease/3 and has that long to be answered: a machine that stalls
	// longer makes the watchdog miss its turn, whatever the lock does.
	select {
	case <-a.Lost():
		locktest.FailUnlessStalled(t, 5*time.Second, lease/3, "the watchdog lost the lock while the holder was alive")
	default:
	}
	if got := pttl(t, c, key); got <= 0 {
		t.Fatalf("PTTL after 3 leases = %d, want > 0 (renewed)", got)
	}
	if n := a.Renewals(); n < 3 {
		locktest.FailUnlessStalled(t, 5*time.Second, lease/3, "%d renewals in 3 leases, want at least 3 (one per lease/3)", n)
	}
	t.Logf("%d renewals in %s", a.Renewals(), 3*lease)
	if b, err := l.Acquire(ctx, key, lock.Options{Lease: lease}); !errors.Is(err, lock.ErrNotObtained) {
		if b != nil {
			_ = b.Release(ctx)
		}
		t.Fatalf("second acquire while held: %v, want ErrNotObtained", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if exists(t, c, key) {
		t.Fatal("key still exists after release")
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
}

// TestFencedFrozenHolderLosesLockToNewerToken: a stop-the-world pause of the holder (injected
// by seckill/lab/fault) holds back its watchdog too, so the lock expires and B gets a newer token.
func TestFencedFrozenHolderLosesLockToNewerToken(t *testing.T) {
	t.Parallel()
	forEachLayout(t, testFencedFrozenHolderLosesLockToNewerToken)
}

func testFencedFrozenHolderLosesLockToNewerToken(t *testing.T, lay layout) {
	const lease = 300 * time.Millisecond
	l, c := fencedSetup(t, lease, lay)
	ctx := t.Context()
	key := "{t}:lock:fenced"

	actx, holder := locktest.Attach(ctx, locktest.Plan{})
	a, err := l.Acquire(actx, key, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	thawed := make(chan struct{})
	go func() {
		holder.Freeze(ctx, 3*lease) // a stop-the-world pause: the watchdog stops with the holder
		close(thawed)
	}()
	// B's lease is long: on a busy machine a 300 ms lease of its own could run out, and the
	// check below would take that for A's release deleting it.
	b, err := l.Acquire(ctx, key, lock.Options{Wait: 3 * time.Second, Lease: 10 * time.Second})
	if err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	select {
	case <-thawed:
		t.Fatal("B acquired only after A thawed: the freeze did not stop A's watchdog")
	default:
	}
	if b.Token() <= a.Token() {
		t.Fatalf("B's token %d is not newer than A's %d", b.Token(), a.Token())
	}
	<-thawed
	select {
	case <-a.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("A's watchdog did not report the lock lost after the freeze")
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A release: %v, want ErrNotHeld", err)
	}
	if !exists(t, c, key) {
		t.Fatal("A's release deleted B's lock")
	}
	select {
	case <-b.Lost():
		t.Fatal("B lost its lock")
	default:
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B release: %v", err)
	}
}

// TestFencedCrashedHoldersLockExpiresOneLeaseLater: a holder whose process dies (its commands
// fail from then on, injected by seckill/lab/fault) renews nothing, so its lock expires.
func TestFencedCrashedHoldersLockExpiresOneLeaseLater(t *testing.T) {
	t.Parallel()
	forEachLayout(t, testFencedCrashedHoldersLockExpiresOneLeaseLater)
}

func testFencedCrashedHoldersLockExpiresOneLeaseLater(t *testing.T, lay layout) {
	const lease = 300 * time.Millisecond
	l, _ := fencedSetup(t, lease, lay)
	ctx := t.Context()
	key := "{t}:lock:fenced"

	actx, holder := locktest.Attach(ctx, locktest.Plan{})
	if _, err := l.Acquire(actx, key, lock.Options{Lease: lease}); err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	holder.Crash()
	start := time.Now()
	// B's lease is long: on a busy machine a 300 ms lease of its own could run out, and the
	// check below would take that for A's release deleting it.
	b, err := l.Acquire(ctx, key, lock.Options{Wait: 3 * time.Second, Lease: 10 * time.Second})
	if err != nil {
		t.Fatalf("B acquire after A's crash: %v", err)
	}
	if el := time.Since(start); el < lease/2 || el > 3*lease {
		t.Fatalf("B acquired %s after the crash, want about one lease (%s)", el, lease)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B release: %v", err)
	}
}

func TestFencedExplicitLeaseHasNoWatchdog(t *testing.T) {
	t.Parallel()
	forEachLayout(t, testFencedExplicitLeaseHasNoWatchdog)
}

func testFencedExplicitLeaseHasNoWatchdog(t *testing.T, lay layout) {
	const lease = 200 * time.Millisecond
	l, c := fencedSetup(t, lease, lay)
	ctx := t.Context()
	key := "{t}:lock:fenced"

	a, err := l.Acquire(ctx, key, lock.Options{Lease: lease, ExplicitLease: true})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	<-a.Lost() // no watchdog: lost once its lease has run out by our clock
	time.Sleep(lease / 2)
	if n := a.Renewals(); exists(t, c, key) || n != 0 {
		t.Fatalf("key still there (or %d renewals) past an explicit lease", n)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release after expiry: %v, want ErrNotHeld", err)
	}
}
