package lock_test

import (
	"context"
	"encoding/hex"
	"errors"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// newExpirable is an ExpirableSemaphore on c, closed when the test ends.
func newExpirable(t *testing.T, c redis.UniversalClient, opts ...lock.Option) *lock.ExpirableSemaphore {
	t.Helper()
	s, err := lock.NewExpirableSemaphore(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// onePermit is an ExpirableSemaphore on a Redis of its own, with names each set to one permit.
func onePermit(t *testing.T, names ...string) *lock.ExpirableSemaphore {
	t.Helper()
	s := newExpirable(t, locktest.NewClient(t, locktest.New(t)))
	for _, name := range names {
		if _, err := s.TrySetPermits(t.Context(), name, 1); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// closedWithin reports whether ch closes within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// TestPermitRedissonLayout: what a Java client reads and writes. The count key and the sorted set
// "{name}:timeout" of Redisson's RPermitExpirableSemaphore, the permit's id as 32 hex digits whose
// bytes are the member, its expiry in unix ms, the count published on release; a permit a Java
// client took whose expiry has passed comes back, and one it took without a lease (Redisson's
// "never" expiry) does not.
func TestPermitRedissonLayout(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newExpirable(t, c)
	ctx := t.Context()
	const name, zset, channel = "permit-java", "{permit-java}:timeout", "redisson_sc:{permit-java}"
	if ok, err := s.TrySetPermits(ctx, name, 2); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	before := time.Now()
	p, err := s.Acquire(ctx, name, 0, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(p.ID()) {
		t.Errorf("id %q, want 32 lower-case hex digits", p.ID())
	}
	raw, _ := hex.DecodeString(p.ID())
	score, err := c.ZScore(ctx, zset, string(raw)).Result()
	if want := float64(before.Add(10 * time.Second).UnixMilli()); err != nil || score < want-1000 || score > want+1000 {
		t.Errorf("expiry %v (%v), want about %v", score, err, want)
	}
	if v, _ := c.Get(ctx, name).Result(); v != "1" {
		t.Errorf("count %q with one permit held, want \"1\"", v)
	}
	ps := c.Subscribe(ctx, channel)
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "2" {
		t.Errorf("release message %v (%v), want the count \"2\"", m, err)
	}
	if n, _ := c.ZCard(ctx, zset).Result(); n != 0 {
		t.Errorf("%d permits left in %s after the release", n, zset)
	}
	// Java took both: one with a lease that has ended, one without a lease.
	c.Set(ctx, name, "0", 0)
	c.ZAdd(ctx, zset, redis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: "java-ended"},
		redis.Z{Score: 922337203685477, Member: "java-never"})
	if n, err := s.AvailablePermits(ctx, name); n != 1 || err != nil {
		t.Errorf("available %d (%v), want 1: the ended permit back", n, err)
	}
	q, err := s.Acquire(ctx, name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Release(context.Background()) }()
	if _, err := s.Acquire(ctx, name, 100*time.Millisecond, 0); !errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("a permit beside Java's never-expiring one: %v, want ErrNotObtained", err)
	}
}

// TestPermitReleaseByJavaWakesGoWaiter: a Go waiter wakes on a Java client's release (ZREM, INCR,
// PUBLISH of the count on redisson_sc:{name}), not at the holder's expiry.
func TestPermitReleaseByJavaWakesGoWaiter(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newExpirable(t, c)
	ctx := t.Context()
	const name, zset, channel = "permit-wake", "{permit-wake}:timeout", "redisson_sc:{permit-wake}"
	c.Set(ctx, name, "0", 0)
	c.ZAdd(ctx, zset, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "java"})
	done := make(chan error, 1)
	go func() {
		p, err := s.Acquire(context.Background(), name, 20*time.Second, 0)
		if err == nil {
			err = p.Release(context.Background())
		}
		done <- err
	}()
	waitSubscribed(t, c, channel)
	c.ZRem(ctx, zset, "java")
	c.Publish(ctx, channel, c.Incr(ctx, name).Val())
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Java-style release did not wake the Go waiter")
	}
}

// TestPermitsStayWithinLimit: goroutines of two processes take and give back permits, with and
// without a lease; never more than the limit hold at once, and every permit is back at the end.
func TestPermitsStayWithinLimit(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	a, b := newExpirable(t, c), newExpirable(t, c)
	const name, limit, workers, rounds = "permit-limit", 3, 8, 4
	if _, err := a.TrySetPermits(t.Context(), name, limit); err != nil {
		t.Fatal(err)
	}
	var holding, most atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		s, lease := []*lock.ExpirableSemaphore{a, b}[w%2], time.Duration(w%3)*5*time.Second
		wg.Go(func() {
			for range rounds {
				p, err := s.Acquire(context.Background(), name, 10*time.Second, lease)
				if err != nil {
					t.Error(err)
					return
				}
				now := holding.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				if n, err := c.Get(context.Background(), name).Int(); err != nil || n < 0 || n > limit {
					t.Errorf("count %d (%v) while held, want 0..%d", n, err, limit)
				}
				holding.Add(-1)
				if err := p.Release(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > limit {
		t.Errorf("%d held at once, limit %d", m, limit)
	}
	if n, err := a.AvailablePermits(t.Context(), name); n != limit || err != nil {
		t.Errorf("%d permits at the end (%v), want %d", n, err, limit)
	}
}

// TestSemaphoreCrashedPermitNeverComesBack is the pitfall beside its fix: a holder that dies
// without releasing keeps an RSemaphore permit for good, while an expirable semaphore's permit
// (watchdog or a lease of its own) comes back when its lease ends, and wakes a waiter.
func TestSemaphoreCrashedPermitNeverComesBack(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	locktest.Install(c)
	sem, exp := newSemaphore(t, c), newExpirable(t, c, lock.WithLease(300*time.Millisecond))
	ctx := t.Context()
	for _, name := range []string{"crash-sem", "crash-watched", "crash-leased"} {
		if _, err := exp.TrySetPermits(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
	}
	hctx, holder := locktest.Attach(ctx, locktest.Plan{})
	if ok, err := sem.TryAcquire(hctx, "crash-sem", 1); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	watched, err := exp.TryAcquire(hctx, "crash-watched", 0)
	if err != nil {
		t.Fatal(err)
	}
	leased, err := exp.TryAcquire(hctx, "crash-leased", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	holder.Crash() // nothing more is renewed or released
	for _, name := range []string{"crash-watched", "crash-leased"} {
		p, err := exp.Acquire(ctx, name, 5*time.Second, 0)
		if err != nil {
			t.Fatalf("%s: the crashed holder's permit did not come back: %v", name, err)
		}
		_ = p.Release(ctx)
	}
	if !closedWithin(watched.Lost(), time.Second) || !closedWithin(leased.Lost(), time.Second) {
		t.Error("a crashed holder's Lost is still open after its lease")
	}
	if err := sem.Acquire(ctx, "crash-sem", 1, 200*time.Millisecond); !errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("the RSemaphore: %v, want ErrNotObtained: its permit never comes back", err)
	}
}

// TestPermitWatchdogRefreshAndRelease: a permit without a lease is renewed while held; Refresh
// pushes a leased one's expiry out; a released permit is not held (Release and Refresh are
// ErrNotHeld, Lost is closed), and every permit is back.
func TestPermitWatchdogRefreshAndRelease(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	// A renewal every 300 ms, each with 600 ms to spare on a busy machine.
	s := newExpirable(t, c, lock.WithLease(900*time.Millisecond))
	ctx := t.Context()
	const name, zset = "permit-life", "{permit-life}:timeout"
	if _, err := s.TrySetPermits(ctx, name, 3); err != nil {
		t.Fatal(err)
	}
	watched, err := s.TryAcquire(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(1500 * time.Millisecond); watched.Renewals() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if watched.Renewals() < 2 || closedWithin(watched.Lost(), 0) {
		t.Errorf("%d renewals, lost %v: want a held permit renewed", watched.Renewals(), closedWithin(watched.Lost(), 0))
	}
	leased, err := s.TryAcquire(ctx, name, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(leased.ID())
	first := c.ZScore(ctx, zset, string(raw)).Val()
	time.Sleep(20 * time.Millisecond)
	if err := leased.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if again := c.ZScore(ctx, zset, string(raw)).Val(); again <= first {
		t.Errorf("expiry %v after Refresh, was %v", again, first)
	}
	if err := leased.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leased.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second Release: %v, want ErrNotHeld", err)
	}
	if err := leased.Refresh(ctx); !errors.Is(err, lock.ErrNotHeld) || !closedWithin(leased.Lost(), 0) {
		t.Errorf("Refresh after Release: %v, want ErrNotHeld and Lost closed", err)
	}
	if err := watched.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.AvailablePermits(ctx, name); n != 3 || err != nil {
		t.Errorf("available %d (%v), want all 3 back", n, err)
	}
}

// TestPermitLeaseRunsOut: a permit whose lease runs out closes Lost, comes back, and its Refresh
// and Release are ErrNotHeld.
func TestPermitLeaseRunsOut(t *testing.T) {
	t.Parallel()
	const name = "permit-runs-out"
	s, ctx := onePermit(t, name), t.Context()
	short, err := s.TryAcquire(ctx, name, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !closedWithin(short.Lost(), time.Second) {
		t.Fatal("Lost still open after the lease")
	}
	// Lost closes a drift margin early; the permit comes back at its expiry.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n, _ := s.AvailablePermits(ctx, name); n == 1 {
			break
		}
	}
	if err := short.Refresh(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh after the lease: %v, want ErrNotHeld", err)
	}
	if err := short.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release after the lease: %v, want ErrNotHeld", err)
	}
	if n, err := s.AvailablePermits(ctx, name); n != 1 || err != nil {
		t.Errorf("available %d (%v), want the permit back", n, err)
	}
}

// TestPermitWaitEnds: a wait whose context ends mid-wait ends with ErrNotObtained and ctx.Err();
// Close ends a wait with ErrClosed, and a later Acquire fails so at once; a permit held across
// Close stays held until its Release.
func TestPermitWaitEnds(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newExpirable(t, c)
	ctx := t.Context()
	for _, name := range []string{"permit-cancel", "permit-close"} {
		if _, err := s.TrySetPermits(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, err := s.TryAcquire(ctx, "permit-cancel", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cancelled.Release(context.Background()) }()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.Acquire(wctx, "permit-cancel", 20*time.Second, 0)
		done <- err
	}()
	waitSubscribed(t, c, "redisson_sc:{permit-cancel}")
	cancel()
	if err := <-done; !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("a wait cancelled mid-wait: %v, want ErrNotObtained and context.Canceled", err)
	}
	held, err := s.TryAcquire(ctx, "permit-close", 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := s.Acquire(context.Background(), "permit-close", 20*time.Second, 0)
		done <- err
	}()
	waitSubscribed(t, c, "redisson_sc:{permit-close}")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, lock.ErrClosed) {
		t.Errorf("a wait ended by Close: %v, want ErrNotObtained and ErrClosed", err)
	}
	if _, err := s.Acquire(ctx, "permit-close", time.Second, 0); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, lock.ErrClosed) {
		t.Errorf("Acquire after Close: %v, want ErrNotObtained and ErrClosed", err)
	}
	if closedWithin(held.Lost(), 0) {
		t.Error("Close closed a held permit's Lost: permits held stay held")
	}
	if err := held.Release(ctx); err != nil {
		t.Errorf("Release after Close: %v, want the permit still held", err)
	}
	if n, err := s.AvailablePermits(ctx, "permit-close"); n != 1 || err != nil {
		t.Errorf("available %d (%v), want the permit back", n, err)
	}
}

// TestPermitReleaseWithEndedContext: a Release whose context has already ended stops the renewal
// and closes Lost at once, returns the context's error, and gives the permit back in the
// background (clause 20), which wakes a waiter.
func TestPermitReleaseWithEndedContext(t *testing.T) {
	t.Parallel()
	const name = "permit-ended"
	s, ctx := onePermit(t, name), t.Context()
	p, err := s.TryAcquire(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Release(ended); !errors.Is(err, context.Canceled) || !closedWithin(p.Lost(), 0) {
		t.Errorf("Release with an ended context: %v, lost %v: want context.Canceled and Lost closed", err, closedWithin(p.Lost(), 0))
	}
	// The release goes on in the background: a waiter is woken by it, long before the 30 s lease
	// would have given the permit back.
	next, err := s.Acquire(ctx, name, 10*time.Second, time.Minute)
	if err != nil {
		t.Fatalf("a waiter after a Release with an ended context: %v, want the permit given back in the background", err)
	}
	if err := p.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("a second Release after the background one: %v, want ErrNotHeld", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Error(err)
	}
}

// TestPermitBadInput: bad names, waits, leases and options are refused, and nothing is written.
func TestPermitBadInput(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	s := newExpirable(t, c)
	ctx := t.Context()
	if _, err := s.Acquire(ctx, "", 0, 0); err == nil {
		t.Error("Acquire with an empty name: no error")
	}
	if _, err := s.Acquire(ctx, "permit-bad", 0, -time.Second); err == nil || errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("Acquire with a negative lease: %v, want a plain error", err)
	}
	if _, err := s.TrySetPermits(ctx, "permit-bad", -2); err == nil {
		t.Error("TrySetPermits(-2): no error")
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("%d keys after bad calls (%v), want none", n, err)
	}
	if _, err := lock.NewExpirableSemaphore(c, lock.WithInstanceID("x")); err == nil {
		t.Error("NewExpirableSemaphore(WithInstanceID): no error")
	}
	if _, err := lock.NewExpirableSemaphore(c, lock.WithLease(-time.Second)); err == nil {
		t.Error("NewExpirableSemaphore(WithLease(-1s)): no error")
	}
}

// TestSemaphoreShardedPubSub: with WithShardedPubSub(true), a release is announced with SPUBLISH
// on redisson_sc:{name}, where a sharded Redisson client listens, and it wakes a waiter of
// either semaphore.
func TestSemaphoreShardedPubSub(t *testing.T) {
	t.Parallel()
	c := shardedServer(t)
	ctx := t.Context()
	sem, err := lock.NewSemaphore(c, lock.WithShardedPubSub(true))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sem.Close() }()
	exp := newExpirable(t, c, lock.WithShardedPubSub(true))
	ps := c.SSubscribe(ctx, "redisson_sc:{sharded-sem}")
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := sem.TrySetPermits(ctx, "sharded-sem", 1); !ok || err != nil {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "1" {
		t.Errorf("sharded message %v (%v), want \"1\"", m, err)
	}
	if _, err := exp.TrySetPermits(ctx, "sharded-exp", 1); err != nil {
		t.Fatal(err)
	}
	p, err := exp.TryAcquire(ctx, "sharded-exp", 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = sem.Acquire(ctx, "sharded-sem", 1, 0)
	done := make(chan error, 2)
	go func() { done <- sem.Acquire(context.Background(), "sharded-sem", 1, 20*time.Second) }()
	go func() {
		q, err := exp.Acquire(context.Background(), "sharded-exp", 20*time.Second, 0)
		if err == nil {
			err = q.Release(context.Background())
		}
		done <- err
	}()
	waitShardSubscribed(t, c, "redisson_sc:{sharded-sem}")
	waitShardSubscribed(t, c, "redisson_sc:{sharded-exp}")
	if err := sem.Release(ctx, "sharded-sem", 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a sharded release did not wake its waiter")
		}
	}
}

// waitShardSubscribed returns once someone listens on channel with SSUBSCRIBE.
func waitShardSubscribed(t *testing.T, c *redis.Client, channel string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if n, err := c.Do(t.Context(), "pubsub", "shardnumsub", channel).Slice(); err == nil && len(n) == 2 && n[1] != int64(0) {
			return
		}
	}
	t.Fatalf("nobody subscribed to %s", channel)
}

// shardedServer is a client on a server of the test's own that knows sharded pub/sub; the test is
// skipped where there is none.
func shardedServer(t *testing.T) *redis.Client {
	t.Helper()
	srv := locktest.New(t)
	if srv.Kind != locktest.KindReal {
		t.Skip("the in-process Redis has no SSUBSCRIBE/SPUBLISH")
	}
	c := locktest.NewClient(t, srv)
	if err := c.Do(t.Context(), "pubsub", "shardnumsub").Err(); err != nil {
		t.Skipf("this redis-server has no sharded pub/sub: %v", err)
	}
	return c
}
