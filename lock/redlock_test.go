package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// rlSetup starts n masters and a redlock Locker over them.
func rlSetup(t *testing.T, n int, lease time.Duration) (*Locker, []*locktest.Server, []*redis.Client) {
	t.Helper()
	servers := locktest.NewN(t, n)
	clients := make([]*redis.Client, n)
	for i, s := range servers {
		clients[i] = locktest.NewClient(t, s)
	}
	locktest.Install(universal(clients...)...) // inert unless a test attaches a locktest.Holder
	l, err := NewRedlock(universal(clients...), WithLease(lease))
	if err != nil {
		t.Fatalf("NewRedlock: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, servers, clients
}

const rlKey = "{inventory001}:lock:redlock"

// rlValues reads the lock key on every master ("" where absent or unreachable; a stopped
// master is given little time, as go-redis would retry its dial for 400 ms).
func rlValues(t *testing.T, clients []*redis.Client) []string {
	t.Helper()
	out := make([]string, len(clients))
	for i, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		out[i], _ = c.Get(ctx, rlKey).Result()
		cancel()
	}
	return out
}

func rlMustAcquire(t *testing.T, l *Locker, opts Options) *Lease {
	t.Helper()
	lease, err := l.Acquire(context.Background(), rlKey, opts)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return lease
}

func TestRedlockSetsEveryMasterExcludesAndReleases(t *testing.T) {
	l, _, clients := rlSetup(t, 3, time.Second)
	lease := rlMustAcquire(t, l, Options{Wait: time.Second})
	vals := rlValues(t, clients)
	for i, v := range vals {
		if v == "" || v != vals[0] {
			t.Fatalf("master %d holds %q, want the same random value on every master: %q", i, v, vals)
		}
	}
	for i, c := range clients {
		pttl := c.PTTL(context.Background(), rlKey).Val()
		if pttl <= 0 || pttl > time.Second {
			t.Errorf("master %d PTTL %v, want in (0, 1s]", i, pttl)
		}
	}
	start := time.Now()
	if _, err := l.Acquire(context.Background(), rlKey, Options{Wait: 150 * time.Millisecond}); !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("second acquire while held: %v, want ErrNotObtained (not ErrUnavailable)", err)
	}
	if el := time.Since(start); el < 150*time.Millisecond || el > time.Second {
		t.Errorf("second acquire gave up after %v, want about the 150ms wait", el)
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Release returns once a majority has deleted; the last master's DEL may still be in flight.
	for deadline := time.Now().Add(500 * time.Millisecond); ; time.Sleep(10 * time.Millisecond) {
		left := 0
		for _, v := range rlValues(t, clients) {
			if v != "" {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			for i, v := range rlValues(t, clients) {
				if v != "" {
					t.Errorf("master %d still holds %q 500ms after release", i, v)
				}
			}
			break
		}
	}
	if err := lease.Release(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
	again := rlMustAcquire(t, l, Options{})
	if err := again.Release(context.Background()); err != nil {
		t.Fatalf("release after re-acquire: %v", err)
	}
}

func TestRedlockNeedsMajorityAndCleansUpAfterFailedAttempt(t *testing.T) {
	l, _, clients := rlSetup(t, 3, time.Second)
	ctx := context.Background()
	// Another client holds the key on one master only: a majority (2 of 3) is still free.
	if err := clients[0].Set(ctx, rlKey, "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	lease := rlMustAcquire(t, l, Options{})
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := clients[0].Get(ctx, rlKey).Val(); got != "someone-else" {
		t.Fatalf("release touched the other holder's key on master 0: %q", got)
	}
	// Held on two of three: no majority, and every failed attempt must remove what it won on
	// the free master.
	if err := clients[1].Set(ctx, rlKey, "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, rlKey, Options{Wait: 100 * time.Millisecond})
	if !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("acquire with the key held on 2 of 3: %v, want ErrNotObtained only", err)
	}
	if got, err := clients[2].Exists(ctx, rlKey).Result(); err != nil || got != 0 {
		t.Fatalf("the failed attempts left their key on the free master (exists=%d, err=%v)", got, err)
	}
}

func TestRedlockMutualExclusionUnderContention(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(map[int]string{3: "3masters", 5: "5masters"}[n], func(t *testing.T) {
			l, _, _ := rlSetup(t, n, 2*time.Second)
			const workers, each = 16, 4
			var inSection, overlaps, counter atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers*each)
			for range workers {
				wg.Go(func() {
					for range each {
						lease, err := l.Acquire(context.Background(), rlKey, Options{Wait: 20 * time.Second})
						if err != nil {
							errs <- err
							return
						}
						if inSection.Add(1) > 1 {
							overlaps.Add(1)
						}
						// A read-sleep-write that loses updates unless the lock excludes.
						v := counter.Load()
						time.Sleep(500 * time.Microsecond)
						counter.Store(v + 1)
						inSection.Add(-1)
						if err := lease.Release(context.Background()); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("buyer: %v", err)
			}
			if overlaps.Load() != 0 || counter.Load() != workers*each {
				t.Fatalf("overlaps=%d counter=%d, want 0 and %d", overlaps.Load(), counter.Load(), workers*each)
			}
		})
	}
}

func TestRedlockOneOfThreeDownStillLocksTwoDownFails(t *testing.T) {
	l, servers, clients := rlSetup(t, 3, time.Second)
	servers[0].Stop()
	lease := rlMustAcquire(t, l, Options{Wait: time.Second})
	if v := rlValues(t, clients); v[1] == "" || v[1] != v[2] {
		t.Fatalf("with master 0 down the lock should be on masters 1 and 2: %q", v)
	}
	if _, err := l.Acquire(context.Background(), rlKey, Options{Wait: 50 * time.Millisecond}); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("a second holder with one master down: %v, want ErrNotObtained", err)
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatalf("release with one master down: %v", err)
	}

	servers[1].Stop()
	start := time.Now()
	_, err := l.Acquire(context.Background(), rlKey, Options{Wait: 200 * time.Millisecond})
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("acquire with two of three down: %v, want ErrNotObtained and ErrUnavailable", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("acquire with two down took %v, want about the 200ms wait", el)
	}
	if v := rlValues(t, clients)[2]; v != "" {
		t.Errorf("failed attempts left %q on the only live master", v)
	}
}

func TestRedlockFiveMastersToleratesTwoDown(t *testing.T) {
	l, servers, clients := rlSetup(t, 5, time.Second)
	if q := l.impl.(*redlockLocker).quorum; q != 3 {
		t.Fatalf("quorum of 5 = %d, want 3", q)
	}
	servers[0].Stop()
	servers[3].Stop()
	lease := rlMustAcquire(t, l, Options{Wait: time.Second})
	vals := rlValues(t, clients)
	for _, i := range []int{1, 2, 4} {
		if vals[i] == "" || vals[i] != vals[1] {
			t.Fatalf("lock should be on masters 1, 2, 4: %q", vals)
		}
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
	servers[4].Stop()
	if _, err := l.Acquire(context.Background(), rlKey, Options{Wait: 100 * time.Millisecond}); !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("acquire with 3 of 5 down: %v, want ErrNotObtained and ErrUnavailable", err)
	}
}

func TestRedlockRenewalKeepsLockThroughThreeLeases(t *testing.T) {
	const ttl = 300 * time.Millisecond
	l, _, clients := rlSetup(t, 3, ttl)
	lease := rlMustAcquire(t, l, Options{})
	// A rival keeps trying for the whole business time.
	rival := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), rlKey, Options{Wait: 3 * ttl})
		rival <- err
	}()
	time.Sleep(3*ttl + 50*time.Millisecond)
	// A renewal is due every ttl/3 and each master has 5% of the ttl to answer it: a machine
	// that stalls a third of the ttl makes the watchdog miss its turn, whatever the lock does.
	if err := <-rival; !errors.Is(err, ErrNotObtained) {
		locktest.FailUnlessStalled(t, 5*time.Second, ttl/3, "rival during renewal: %v, want ErrNotObtained", err)
	}
	select {
	case <-lease.Lost():
		locktest.FailUnlessStalled(t, 5*time.Second, ttl/3, "Lost closed although every master was up")
	default:
	}
	if n := lease.Renewals(); n < 2 {
		locktest.FailUnlessStalled(t, 5*time.Second, ttl/3, "renewals after 3 ttls = %d, want >= 2", n)
	}
	for i, c := range clients {
		if p := c.PTTL(context.Background(), rlKey).Val(); p <= 0 {
			locktest.FailUnlessStalled(t, 5*time.Second, ttl/3, "master %d PTTL %v after 3 ttls, want the renewed key", i, p)
		}
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
}

func TestRedlockLostWhenRenewalCannotReachMajority(t *testing.T) {
	const ttl = 300 * time.Millisecond
	l, servers, _ := rlSetup(t, 3, ttl)
	lease := rlMustAcquire(t, l, Options{})
	servers[0].Stop()
	servers[1].Stop()
	select {
	case <-lease.Lost():
	case <-time.After(2 * ttl):
		t.Fatal("Lost not closed although two of three masters are gone")
	}
	if err := lease.Release(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("release with two masters down: %v, want ErrUnavailable", err)
	}
}

func TestRedlockValidityRunsOutWithExplicitLease(t *testing.T) {
	const ttl = 200 * time.Millisecond
	l, _, _ := rlSetup(t, 3, time.Minute)
	// A wait, so a node slower than redsync's per-node timeout (5% of the ttl: 10 ms) on a loaded
	// machine costs a retry, not the test.
	lease := rlMustAcquire(t, l, Options{Lease: ttl, ExplicitLease: true, Wait: 2 * time.Second})
	start := time.Now() // the validity counts from the winning attempt, which began before this
	select {
	case <-lease.Lost():
		// The validity timer fires before the TTL; allow the timer's own latency on a loaded machine.
		if el := time.Since(start); el > ttl+ttl/4 {
			t.Fatalf("Lost closed after %v, the validity (< ttl %v) should have ended it earlier", el, ttl)
		}
	case <-time.After(2 * ttl):
		t.Fatal("Lost not closed after the validity ran out")
	}
	if n := lease.Renewals(); n != 0 {
		t.Fatalf("an explicit lease must not be renewed: %d renewals", n)
	}
	// The keys expire a moment later; then someone else holds it and the old release is refused.
	b, err := l.Acquire(context.Background(), rlKey, Options{Wait: time.Second, Lease: time.Second})
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	if err := lease.Release(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of an expired lock: %v, want ErrNotHeld", err)
	}
	if err := b.Release(context.Background()); err != nil {
		t.Fatalf("B's release (A's must not have deleted B's lock): %v", err)
	}
}

// TestRedlockPausedHolderLosesTheLock: a stop-the-world pause of the holder (injected from
// outside by seckill/lab/fault) holds back its extensions too, so a pause longer than the
// validity loses the lock.
func TestRedlockPausedHolderLosesTheLock(t *testing.T) {
	const ttl = 300 * time.Millisecond
	l, _, _ := rlSetup(t, 3, ttl)
	ctx, holder := locktest.Attach(t.Context(), locktest.Plan{})
	lease, err := l.Acquire(ctx, rlKey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := lease.Renewals()
	start := time.Now()
	holder.Freeze(ctx, 2*ttl)
	if el := time.Since(start); el < 2*ttl {
		t.Fatalf("the pause returned after %v, want it to block for %v", el, 2*ttl)
	}
	if got := lease.Renewals(); got != before {
		t.Fatalf("renewals went from %d to %d during the freeze", before, got)
	}
	select {
	case <-lease.Lost():
	default:
		t.Fatal("a pause longer than the validity must close Lost")
	}
	if err := lease.Release(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release after the lock expired in a pause: %v, want ErrNotHeld", err)
	}
}

// TestRedlockCrashedHolderLeavesKeysUntilTTL: a holder whose process dies (its commands fail
// from then on, injected by seckill/lab/fault) renews nothing and deletes nothing.
func TestRedlockCrashedHolderLeavesKeysUntilTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	l, _, clients := rlSetup(t, 3, ttl)
	ctx, holder := locktest.Attach(t.Context(), locktest.Plan{})
	lease, err := l.Acquire(ctx, rlKey, Options{Wait: time.Second}) // a wait: one attempt on a busy machine may time out
	if err != nil {
		t.Fatal(err)
	}
	holder.Crash()
	for i, v := range rlValues(t, clients) {
		if v == "" {
			t.Fatalf("master %d lost the crashed holder's key at once", i)
		}
	}
	start := time.Now()
	b, err := l.Acquire(context.Background(), rlKey, Options{Wait: 3 * ttl})
	if err != nil {
		t.Fatalf("acquire after the crashed holder's ttl: %v", err)
	}
	if el := time.Since(start); el < ttl/2 {
		t.Fatalf("acquired %v after the crash: the abandoned lock should have lasted about its ttl %v (renewal must stop, nothing deleted)", el, ttl)
	}
	if n := lease.Renewals(); n != 0 {
		t.Errorf("crashed holder's lease renewed %d times", n)
	}
	if err := b.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockWaitEndsWithContext(t *testing.T) {
	l, _, _ := rlSetup(t, 3, 2*time.Second)
	held := rlMustAcquire(t, l, Options{})
	defer func() { _ = held.Release(context.Background()) }()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := l.Acquire(ctx, rlKey, Options{Wait: 10 * time.Second})
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v, want ErrNotObtained and context.Canceled", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("cancelled acquire returned after %v", el)
	}
}
