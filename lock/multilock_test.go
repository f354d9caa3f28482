package lock_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// mlSetup starts three masters and builds mode multilock on them as service instance id.
func mlSetup(t *testing.T, id string, lease time.Duration) (*lock.Locker, []*locktest.Server, []*redis.Client) {
	t.Helper()
	srvs := locktest.NewN(t, 3)
	var clients []*redis.Client
	for _, s := range srvs {
		clients = append(clients, locktest.NewClient(t, s))
	}
	return mlLocker(t, clients, id, lease), srvs, clients
}

func mlLocker(t *testing.T, clients []*redis.Client, id string, lease time.Duration) *lock.Locker {
	t.Helper()
	locktest.Install(lock.Universal(clients...)...) // inert unless a test acquires under a locktest.Holder
	l, err := lock.NewMultilock(lock.Universal(clients...), lock.WithLease(lease), lock.WithInstanceID(id),
		lock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("build multilock: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close multilock: %v", err)
		}
	})
	return l
}

// mlKeysLeft lists the masters (1-based) on which key exists.
func mlKeysLeft(t *testing.T, clients []*redis.Client, key string) []int {
	t.Helper()
	var left []int
	for i, c := range clients {
		n, err := c.Exists(t.Context(), key).Result()
		if err != nil {
			t.Fatalf("EXISTS on master %d: %v", i+1, err)
		}
		if n > 0 {
			left = append(left, i+1)
		}
	}
	return left
}

// mlKeysGone waits up to within for key to be gone from every master of clients (a failed
// acquisition gives back what it took in the background), and answers the masters that still
// hold it.
func mlKeysGone(t *testing.T, clients []*redis.Client, key string, within time.Duration) []int {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		if left := mlKeysLeft(t, clients, key); len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

func TestMultilockTakesEveryMasterAndExcludes(t *testing.T) {
	t.Parallel()
	const lease = 600 * time.Millisecond
	a, _, clients := mlSetup(t, "inst-a", lease)
	b := mlLocker(t, clients, "inst-b", lease)
	const key = "{inventory001}:lock:multilock"

	la := reentAcquire(t, a, "order-1", key, lock.Options{})
	parts := la.Parts()
	if len(parts) != 3 {
		t.Fatalf("%d parts, want one per master", len(parts))
	}
	for i, c := range clients {
		if h := reentHash(t, c, key); len(h) != 1 || h["inst-a:order-1"] != "1" {
			t.Fatalf("master %d HGETALL = %v, want {inst-a:order-1: 1}", i+1, h)
		}
		if p := reentPTTL(t, c, key); p <= 0 || p > lease.Milliseconds() {
			t.Fatalf("master %d PTTL = %d", i+1, p)
		}
	}
	if _, err := b.Acquire(t.Context(), key, lock.Options{Owner: "order-2", Wait: 100 * time.Millisecond}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second owner = %v, want ErrNotObtained", err)
	}
	for i, c := range clients {
		if h := reentHash(t, c, key); len(h) != 1 {
			t.Fatalf("the refused owner left a field on master %d: %v", i+1, h)
		}
	}
	reentRelease(t, la)
	if left := mlKeysLeft(t, clients, key); len(left) != 0 {
		t.Fatalf("keys left on masters %v after release", left)
	}
	if err := la.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release = %v, want ErrNotHeld", err)
	}
}

// TestMultilockGivesBackPartialAcquisition: master 2 is held by someone else, so a multilock
// buyer gets master 1, cannot get master 2, and must give master 1 back.
func TestMultilockGivesBackPartialAcquisition(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	a, _, clients := mlSetup(t, "inst-a", lease)
	const key = "partial"
	other := reentLocker(t, clients[1], "java", lease)
	lo := reentAcquire(t, other, "thread-1", key, lock.Options{})

	start := time.Now()
	_, err := a.Acquire(t.Context(), key, lock.Options{Owner: "buyer", Wait: 300 * time.Millisecond})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire with master 2 taken = %v, want ErrNotObtained", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("gave up after %s, the wait was 300ms", d)
	}
	if left := mlKeysLeft(t, clients, key); len(left) != 1 || left[0] != 2 {
		t.Fatalf("keys on masters %v, want only master 2's (the other holder's)", left)
	}
	if h := reentHash(t, clients[1], key); len(h) != 1 || h["java:thread-1"] != "1" {
		t.Fatalf("master 2's holder was disturbed: %v", h)
	}
	reentRelease(t, lo)
	reentRelease(t, reentAcquire(t, a, "buyer", key, lock.Options{}))
}

func TestMultilockMasterDownFailsCleanlyThenRecovers(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	a, srvs, clients := mlSetup(t, "inst-a", lease)
	const key = "down"
	reentRelease(t, reentAcquire(t, a, "warm", key, lock.Options{}))
	srvs[2].Stop()

	// A master refusing connections is ridden out within the wait (a failover may bring it
	// back); the acquisition fails with ErrUnavailable when the wait ends that way, with nothing
	// left locked on the others.
	const wait = 1500 * time.Millisecond
	start := time.Now()
	_, err := a.Acquire(t.Context(), key, lock.Options{Owner: "buyer", Wait: wait})
	took := time.Since(start)
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire with master 3 down = %v, want ErrNotObtained wrapping ErrUnavailable", err)
	}
	if took < wait-100*time.Millisecond {
		t.Fatalf("failing took %s, the wait was %s: a refused master is ridden out within the wait", took, wait)
	}
	if left := mlKeysGone(t, clients[:2], key, 2*time.Second); len(left) != 0 {
		t.Fatalf("keys left behind on masters %v", left)
	}
	// The master comes back during a wait: the waiter gets the lock.
	type result struct {
		le  *lock.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		la, err := a.Acquire(t.Context(), key, lock.Options{Owner: "buyer", Wait: 5 * time.Second})
		got <- result{la, err}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := srvs[2].Restart(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("acquire across master 3's restart: %v", r.err)
	}
	if err := r.le.Release(t.Context()); errors.Is(err, lock.ErrNotHeld) {
		// Only a watchdog kept from running a third of the 1 s lease loses it here.
		locktest.FailUnlessStalled(t, 5*time.Second, lease/3, "release after master 3's restart: %v", err)
	} else if err != nil {
		t.Fatalf("release after master 3's restart: %v", err)
	}
}

func TestMultilockWatchdogRenewsEveryMasterAndReportsLoss(t *testing.T) {
	t.Parallel()
	// Each renewal may take a third of the lease: 200 ms, which a busy machine can keep.
	const lease = 600 * time.Millisecond
	a, srvs, clients := mlSetup(t, "inst-a", lease)
	const key = "renewed"
	la := reentAcquire(t, a, "holder", key, lock.Options{})
	time.Sleep(3 * lease)
	for i, p := range la.Parts() {
		if n := renewals(t, p); n < 2 {
			t.Fatalf("master %d renewed %d times over 3 leases, want >= 2", i+1, n)
		}
	}
	if left := mlKeysLeft(t, clients, key); len(left) != 3 {
		t.Fatalf("after 3 leases the key is only on masters %v", left)
	}
	select {
	case <-la.Lost():
		t.Fatal("Lost closed while every master renews")
	default:
	}
	// Master 2 dies: its renewal fails, so the whole lock is lost.
	srvs[1].Stop()
	select {
	case <-la.Lost():
	case <-time.After(3 * lease):
		t.Fatal("a master's failed renewal did not make the multilock Lost")
	}
	if err := la.Release(t.Context()); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("release with master 2 down = %v, want ErrUnavailable", err)
	}
	if left := mlKeysLeft(t, []*redis.Client{clients[0], clients[2]}, key); len(left) != 0 {
		t.Fatalf("the release left keys on the live masters %v", left)
	}
}

// TestMultilockPausedAndCrashedHolders: a paused holder's watchdogs pause with it, so its lock
// expires on every master; a crashed holder's lock stays until its lease ends, then goes.
func TestMultilockPausedAndCrashedHolders(t *testing.T) {
	t.Parallel()
	const lease = 300 * time.Millisecond
	a, _, clients := mlSetup(t, "inst-a", lease)
	const key = "faults"
	la, gc := heldUnderFault(t, a, "gc", key)
	gc.Freeze(t.Context(), 2*lease)
	if left := mlKeysLeft(t, clients, key); len(left) != 0 {
		t.Fatalf("the paused holder's watchdogs kept masters %v alive", left)
	}
	select {
	case <-la.Lost():
	case <-time.After(lease):
		t.Fatal("not Lost after the pause")
	}
	if err := la.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release after the lock expired = %v, want ErrNotHeld", err)
	}

	_, dead := heldUnderFault(t, a, "dead", key)
	dead.Crash()
	if left := mlKeysLeft(t, clients, key); len(left) != 3 {
		t.Fatalf("a crashed holder's lock should stay until its lease ends, found on %v", left)
	}
	// Gone once its lease runs out with nobody renewing it: within a few leases, however busy the
	// machine (the TTL runs in Redis); a watchdog still running would keep it for good.
	for deadline := time.Now().Add(20 * lease); ; time.Sleep(lease / 10) {
		left := mlKeysLeft(t, clients, key)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a crashed holder's lock still on masters %v %v later: its watchdogs still run", left, 20*lease)
		}
	}
}

func TestMultilockWithoutMasters(t *testing.T) {
	t.Parallel()
	// Without masters nothing is built (the service's mode registry, internal/modes, answers
	// for a mode it cannot build); what comes back still answers ErrUnavailable.
	for _, masters := range [][]redis.UniversalClient{nil, {}} {
		l, err := lock.NewMultilock(masters, lock.WithInstanceID("x"))
		if !errors.Is(err, lock.ErrUnavailable) || l != nil {
			t.Fatalf("build with masters %v = %v, %v; want no locker and ErrUnavailable", masters, l, err)
		}
		if _, err := l.Acquire(t.Context(), "k", lock.Options{}); !errors.Is(err, lock.ErrUnavailable) {
			t.Fatalf("acquire without masters = %v, want ErrUnavailable", err)
		}
	}
}
