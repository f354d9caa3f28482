package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// reentLocker builds mode reentrant on c as service instance id with default lease.
func reentLocker(t *testing.T, c *redis.Client, id string, lease time.Duration) *lock.Locker {
	t.Helper()
	locktest.Install(c) // inert unless a test acquires under a locktest.Holder
	l, err := lock.NewReentrant(c, lock.WithLease(lease), lock.WithInstanceID(id), lock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("build reentrant: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close locker: %v", err)
		}
	})
	return l
}

// setupWait is the wait of an acquisition that sets a test up, of a lock nobody holds: a single
// attempt may take longer than its grace on a busy machine, which is not what the test checks.
const setupWait = 5 * time.Second

func reentAcquire(t *testing.T, l *lock.Locker, owner, key string, opts lock.Options) *lock.Lease {
	t.Helper()
	opts.Owner = owner
	if opts.Wait == 0 {
		opts.Wait = setupWait
	}
	le, err := l.Acquire(t.Context(), key, opts)
	if err != nil {
		t.Fatalf("acquire %s as %s: %v", key, owner, err)
	}
	return le
}

// heldUnderFault acquires key as owner under a locktest.Holder, so the test can crash or pause the
// holder as the lab does (the Locker's clients must carry locktest.Install's hook).
func heldUnderFault(t *testing.T, l *lock.Locker, owner, key string) (*lock.Lease, *locktest.Holder) {
	t.Helper()
	ctx, h := locktest.Attach(t.Context(), locktest.Plan{})
	le, err := l.Acquire(ctx, key, lock.Options{Owner: owner, Wait: setupWait})
	if err != nil {
		t.Fatalf("acquire %s as %s: %v", key, owner, err)
	}
	return le, h
}

// renewals is a lease's watchdog renewal count.
func renewals(t *testing.T, le *lock.Lease) int64 {
	t.Helper()
	if le.Lost() == nil {
		t.Fatalf("the lease of %s has no watchdog (no Lost channel)", le.Key())
	}
	return le.Renewals()
}

func reentRelease(t *testing.T, le *lock.Lease) {
	t.Helper()
	if err := le.Release(t.Context()); err != nil {
		t.Fatalf("release %s: %v", le.Key(), err)
	}
}

func reentHash(t *testing.T, c *redis.Client, key string) map[string]string {
	t.Helper()
	h, err := c.HGetAll(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return h
}

func reentPTTL(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(t.Context(), "pttl", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

// reentSubscribe listens on channel with its own connection and returns once Redis confirmed.
func reentSubscribe(t *testing.T, c *redis.Client, channel string) *redis.PubSub {
	t.Helper()
	ps := c.Subscribe(t.Context(), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.ReceiveTimeout(t.Context(), 2*time.Second); err != nil {
		t.Fatalf("subscribe %s: %v", channel, err)
	}
	return ps
}

// reentWaitSubscribed waits until n of this library's processes listen for the releases of the
// lock whose unlock channel is channel. They listen to that channel by pattern (PUBSUB NUMSUB
// leaves them out) and, after it, each to its own nomination channel of the lock, which are
// counted here.
func reentWaitSubscribed(t *testing.T, c *redis.Client, channel string, n int64) {
	t.Helper()
	own := strings.Replace(channel, "redisson_lock__channel:", "golock_rlock_next:", 1) + ":*"
	for range 200 {
		chans, err := c.PubSubChannels(t.Context(), own).Result()
		if err != nil {
			t.Fatalf("PUBSUB CHANNELS: %v", err)
		}
		if int64(len(chans)) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("nobody listens for the releases of %s", channel)
}

type reentWaited struct {
	lease *lock.Lease
	at    time.Time
	err   error
}

// reentWaitAsync starts an Acquire that waits up to wait; the result arrives on the channel.
func reentWaitAsync(t *testing.T, l *lock.Locker, owner, key string, wait time.Duration) <-chan reentWaited {
	t.Helper()
	got := make(chan reentWaited, 1)
	go func() {
		le, err := l.Acquire(context.Background(), key, lock.Options{Owner: owner, Wait: wait})
		got <- reentWaited{lease: le, at: time.Now(), err: err}
	}()
	return got
}

// TestReentrantRedissonLayout reads the raw hash and channel: the same bytes a Java Redisson
// client writes and listens to.
func TestReentrantRedissonLayout(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 600 * time.Millisecond
	l := reentLocker(t, c, "inst-a", lease)
	for _, tc := range []struct{ key, channel string }{
		{"myLock", "redisson_lock__channel:{myLock}"},
		// Redisson keeps an existing hash tag (RedissonObject.prefixName).
		{"{inventory001}:lock:reentrant", "redisson_lock__channel:{inventory001}:lock:reentrant"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			ps := reentSubscribe(t, c, tc.channel)
			field := "inst-a:order-1"
			first := reentAcquire(t, l, "order-1", tc.key, lock.Options{})
			if typ := c.Type(t.Context(), tc.key).Val(); typ != "hash" {
				t.Fatalf("TYPE %s = %q, want hash", tc.key, typ)
			}
			if h := reentHash(t, c, tc.key); len(h) != 1 || h[field] != "1" {
				t.Fatalf("after one acquire HGETALL = %v, want {%s: 1}", h, field)
			}
			if p := reentPTTL(t, c, tc.key); p <= 0 || p > lease.Milliseconds() {
				t.Fatalf("PTTL = %d, want in (0, %d]", p, lease.Milliseconds())
			}
			if f := first.Field(); f != field {
				t.Fatalf("Field() = %q, want %q", f, field)
			}
			nested := reentAcquire(t, l, "order-1", tc.key, lock.Options{})
			if h := reentHash(t, c, tc.key); len(h) != 1 || h[field] != "2" {
				t.Fatalf("after nested acquire HGETALL = %v, want {%s: 2}", h, field)
			}
			reentRelease(t, nested)
			if h := reentHash(t, c, tc.key); h[field] != "1" {
				t.Fatalf("after one release HGETALL = %v, want {%s: 1}", h, field)
			}
			if p := reentPTTL(t, c, tc.key); p <= 0 {
				t.Fatalf("PTTL after the inner release = %d, want the lease re-armed", p)
			}
			if msg, err := ps.ReceiveTimeout(t.Context(), 50*time.Millisecond); err == nil {
				t.Fatalf("an inner release published %v; only the last one may", msg)
			}
			reentRelease(t, first)
			if n := c.Exists(t.Context(), tc.key).Val(); n != 0 {
				t.Fatalf("after the last release %s still exists", tc.key)
			}
			msg, err := ps.ReceiveMessage(t.Context())
			if err != nil {
				t.Fatalf("no unlock message: %v", err)
			}
			if msg.Channel != tc.channel || msg.Payload != "0" {
				t.Fatalf("unlock message %q on %q, want \"0\" on %q", msg.Payload, msg.Channel, tc.channel)
			}
		})
	}
}

// What a Java Redisson 3.13 client sends (RedissonLock.tryLockInnerAsync and unlockInnerAsync,
// from https://github.com/redisson/redisson): the interop tests run them next to ours on the same Redis.
const (
	javaLock   = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
	javaUnlock = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;"
)

func TestReentrantExcludesWithJavaRedisson(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := reentLocker(t, c, "go-instance", 5*time.Second)
	const key, javaField = "redisLock", "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	channel := "redisson_lock__channel:{" + key + "}"

	// Java holds: we are excluded, then woken by Java's unlock message.
	if err := c.Eval(t.Context(), javaLock, []string{key}, 30000, javaField).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("java lock = %v, want nil (acquired)", err)
	}
	if _, err := l.Acquire(t.Context(), key, lock.Options{Owner: "o1"}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire while Java holds = %v, want ErrNotObtained", err)
	}
	got := reentWaitAsync(t, l, "o1", key, 5*time.Second)
	reentWaitSubscribed(t, c, channel, 1)
	released := time.Now()
	if n, err := c.Eval(t.Context(), javaUnlock, []string{key, channel}, 0, 30000, javaField).Int(); err != nil || n != 1 {
		t.Fatalf("java unlock = %d, %v; want 1", n, err)
	}
	w := <-got
	if w.err != nil {
		t.Fatalf("wait for Java's lock: %v", w.err)
	}
	reentRelease(t, w.lease)
	if d := w.at.Sub(released); d > 500*time.Millisecond {
		t.Fatalf("woken %s after Java's unlock; the lock's PTTL was ~30s, the message should wake at once", d)
	}

	// We hold: Java's script is refused with our PTTL, and gets it once we release.
	le := reentAcquire(t, l, "o2", key, lock.Options{})
	ttl, err := c.Eval(t.Context(), javaLock, []string{key}, 30000, javaField).Int64()
	if err != nil || ttl <= 0 {
		t.Fatalf("java lock while we hold = %d, %v; want our PTTL", ttl, err)
	}
	ps := reentSubscribe(t, c, channel)
	reentRelease(t, le)
	if msg, err := ps.ReceiveMessage(t.Context()); err != nil || msg.Payload != "0" {
		t.Fatalf("Java's waiters got %v, %v; want \"0\"", msg, err)
	}
	if err := c.Eval(t.Context(), javaLock, []string{key}, 30000, javaField).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("java lock after our release = %v, want nil (acquired)", err)
	}
}

func TestReentrantNestedAcquireNeedsAsManyReleases(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := reentLocker(t, c, "inst", time.Second)
	const key = "nested"
	var leases []*lock.Lease
	for range 3 {
		leases = append(leases, reentAcquire(t, l, "req-1", key, lock.Options{}))
	}
	for i, le := range leases {
		if _, err := l.Acquire(t.Context(), key, lock.Options{Owner: "req-2"}); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("another owner after %d of 3 releases: %v, want ErrNotObtained", i, err)
		}
		reentRelease(t, le)
	}
	other := reentAcquire(t, l, "req-2", key, lock.Options{})
	if err := leases[0].Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("a fourth release = %v, want ErrNotHeld", err)
	}
	reentRelease(t, other)
}

func TestReentrantReleaseByNonHolderIsErrNotHeld(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	a := reentLocker(t, c, "inst-a", time.Second)
	b := reentLocker(t, c, "inst-b", time.Second)
	const key = "expired"
	// A's explicit lease runs out (no watchdog), B takes the lock, then A tries to release.
	la := reentAcquire(t, a, "order-a", key, lock.Options{Lease: 100 * time.Millisecond, ExplicitLease: true})
	select {
	case <-la.Lost(): // no watchdog: lost once its lease has run out by our clock
	case <-time.After(2 * time.Second):
		t.Fatal("an explicit lease's Lost stayed open 2 s past its 100ms lease")
	}
	lb := reentAcquire(t, b, "order-b", key, lock.Options{Wait: time.Second})
	if err := la.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release by the former holder = %v, want ErrNotHeld", err)
	}
	if h := reentHash(t, c, key); len(h) != 1 || h["inst-b:order-b"] != "1" {
		t.Fatalf("B's lock after A's release attempt: %v, want untouched", h)
	}
	reentRelease(t, lb)
	if err := lb.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release of the same lease = %v, want ErrNotHeld", err)
	}
}

// TestReentrantWatchdogKeepsLockThroughThreeLeases: business time of three leases, and nobody
// gets in; the same hold with an explicit lease (no watchdog) lets another owner in, which is
// what the watchdog prevents.
func TestReentrantWatchdogKeepsLockThroughThreeLeases(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 300 * time.Millisecond
	a := reentLocker(t, c, "inst-a", lease)
	b := reentLocker(t, c, "inst-b", lease)

	const key = "watched"
	la := reentAcquire(t, a, "holder", key, lock.Options{})
	start := time.Now()
	_, err := b.Acquire(t.Context(), key, lock.Options{Owner: "intruder", Wait: 3 * lease})
	if !errors.Is(err, lock.ErrNotObtained) {
		// A renewal is due every lease/3: a machine that stalls that long makes it late.
		locktest.FailUnlessStalled(t, 5*time.Second, lease/3, "another owner during 3 leases of business time: %v, want ErrNotObtained", err)
	}
	if d := time.Since(start); d < 3*lease {
		t.Fatalf("the intruder gave up after %s, before the 3 leases had passed", d)
	}
	if n := renewals(t, la); n < 2 {
		t.Fatalf("renewals = %d over 3 leases, want >= 2", n)
	}
	select {
	case <-la.Lost():
		t.Fatal("Lost closed while the lock was held and renewed")
	default:
	}
	if p := reentPTTL(t, c, key); p <= 0 {
		t.Fatalf("PTTL = %d while held", p)
	}
	reentRelease(t, la)
	reentRelease(t, reentAcquire(t, b, "intruder", key, lock.Options{}))

	// Control: without the watchdog the same business time lets the intruder in.
	lx := reentAcquire(t, a, "holder", key, lock.Options{Lease: lease, ExplicitLease: true})
	lb, err := b.Acquire(t.Context(), key, lock.Options{Owner: "intruder", Wait: 3 * lease})
	if err != nil {
		t.Fatalf("with an explicit lease the intruder should get in after one lease: %v", err)
	}
	reentRelease(t, lb)
	if err := lx.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("releasing the expired explicit lease = %v, want ErrNotHeld", err)
	}
}

// TestReentrantWatchdogRidesOutAStalledRedis: Redis stops answering for less than the lease
// (SIGSTOP), so renewal calls time out; the lock is still ours until its TTL, so the watchdog
// keeps trying and must not report it lost.
func TestReentrantWatchdogRidesOutAStalledRedis(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	if srv.PID() == 0 {
		t.Skip("needs a real redis-server to pause with SIGSTOP (apt-get install redis-server)")
	}
	c := locktest.NewClient(t, srv)
	const lease = 600 * time.Millisecond // renewal every 200ms, each call bounded by 200ms
	l := reentLocker(t, c, "inst", lease)
	const key = "stalled"
	// Redis stopped from 150 to 430 ms of a 600 ms lease: the lock is still valid when it comes
	// back. A busy machine may stretch that past the lease, which then really runs out; such a
	// try says nothing, and is made again.
	var le *lock.Lease
	for try := 0; ; try++ {
		acquired := time.Now()
		le = reentAcquire(t, l, "holder", key, lock.Options{})
		time.Sleep(150 * time.Millisecond)
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(280 * time.Millisecond) // the renewal due at 200ms times out at least once
		if err := srv.Resume(); err != nil {
			t.Fatal(err)
		}
		back := time.Since(acquired)
		if back < lease-100*time.Millisecond {
			break
		}
		if try == 2 {
			t.Skipf("the machine stretched the 430 ms from the acquisition to Redis's return to %s three times, too near the %s lease to judge", back, lease)
		}
		_ = le.Release(t.Context())
	}
	time.Sleep(2 * lease)
	select {
	case <-le.Lost():
		t.Fatal("a renewal that timed out while the lock was still valid was taken for a loss")
	default:
	}
	if n := renewals(t, le); n < 2 {
		t.Fatalf("renewals = %d, want the watchdog to carry on after the stall", n)
	}
	reentRelease(t, le)
}

func TestReentrantCrashedHolderExpiresOneLeaseLater(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 400 * time.Millisecond
	a := reentLocker(t, c, "inst-a", lease)
	b := reentLocker(t, c, "inst-b", lease)
	const key = "crashed"

	start := time.Now()
	la, holder := heldUnderFault(t, a, "dead", key)
	holder.Crash() // the process dies: its commands, renewals included, fail from here on
	lb, err := b.Acquire(t.Context(), key, lock.Options{Owner: "next", Wait: 3 * lease})
	if err != nil {
		t.Fatalf("the crashed holder's lock never expired: %v", err)
	}
	took := time.Since(start)
	// Redis expires on its own millisecond clock; allow a few ms of rounding.
	if took < lease-10*time.Millisecond {
		t.Fatalf("next owner got the lock %s after the crash, before its lease (%s) ran out", took, lease)
	}
	if took > lease+300*time.Millisecond {
		locktest.FailUnlessStalled(t, 5*time.Second, 250*time.Millisecond, "next owner got the lock %s after the crash, want about one lease (%s)", took, lease)
	}
	if n := renewals(t, la); n != 0 {
		t.Fatalf("the dead holder's watchdog renewed %d times", n)
	}
	if h := reentHash(t, c, key); h["inst-b:next"] != "1" || len(h) != 1 {
		t.Fatalf("lock after takeover: %v", h)
	}
	reentRelease(t, lb)
}

// TestReentrantWaiterWokenByUnlockMessage: a waiter in another process does not poll while it
// waits (it looks again every 250 ms at most, in case the process told of a release died), and
// gets the lock within milliseconds of the release, told by it, although the holder's PTTL was
// seconds.
func TestReentrantWaiterWokenByUnlockMessage(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 5 * time.Second
	a := reentLocker(t, c, "inst-a", lease)
	b := reentLocker(t, c, "inst-b", lease)
	const key = "wake"
	la := reentAcquire(t, a, "holder", key, lock.Options{})

	got := reentWaitAsync(t, b, "waiter", key, 3*time.Second)
	reentWaitSubscribed(t, c, "redisson_lock__channel:{"+key+"}", 1)
	time.Sleep(20 * time.Millisecond) // let the waiter finish its second try
	calls := locktest.Count(c)
	time.Sleep(600 * time.Millisecond)
	// In line across processes, a head looks again every 250 ms (a try and its place in line
	// kept: 2 scripts), in case the process told of a release died; no more often.
	if n := calls.Of("eval", "evalsha"); n > 6 {
		t.Fatalf("the waiter ran %d scripts in 600ms of waiting: it polls faster than every 250 ms", n)
	}
	released := time.Now()
	reentRelease(t, la)
	w := <-got
	if w.err != nil {
		t.Fatalf("waiter: %v", w.err)
	}
	reentRelease(t, w.lease)
	if d := w.at.Sub(released); d > 100*time.Millisecond {
		locktest.FailUnlessStalled(t, 5*time.Second, 75*time.Millisecond, "waiter got the lock %s after the release; PTTL fallback was ~%s, the message should be far faster", d, lease)
	}
	t.Logf("waiter acquired %s after the release", w.at.Sub(released))
}

// TestReentrantHandoffWakesOneWaiterAtATime: a queue of waiters is served by one unlock message
// each: all get through quickly (no lost wake-up), never two at once, and each release costs
// one retry, not one per waiter.
func TestReentrantHandoffWakesOneWaiterAtATime(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease, waiters = 5 * time.Second, 10
	l := reentLocker(t, c, "inst", lease)
	const key = "queue"
	first := reentAcquire(t, l, "first", key, lock.Options{})
	calls := locktest.Count(c)
	var inside, overlaps, done atomic.Int64
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			le, err := l.Acquire(context.Background(), key, lock.Options{Owner: fmt.Sprint("w", i), Wait: 3 * time.Second})
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
			inside.Add(-1)
			if err := le.Release(context.Background()); err != nil {
				t.Errorf("waiter %d release: %v", i, err)
			}
			done.Add(1)
		})
	}
	reentWaitSubscribed(t, c, "redisson_lock__channel:{"+key+"}", 1)
	time.Sleep(50 * time.Millisecond) // every waiter is queued
	start := time.Now()
	reentRelease(t, first)
	wg.Wait()
	took := time.Since(start)
	if done.Load() != waiters || overlaps.Load() != 0 {
		t.Fatalf("served %d of %d waiters with %d overlaps", done.Load(), waiters, overlaps.Load())
	}
	if took > time.Second {
		t.Fatalf("the queue took %s: a wake-up was lost and a waiter fell back on the %s PTTL", took, lease)
	}
	// Each waiter: a failed try, a try after subscribing, the winning try, its release; plus the
	// first holder's release. Waking every waiter on each release would add ~waiters²/2 tries.
	scripts := calls.Of("eval", "evalsha")
	if limit := int64(6 * waiters); scripts > limit {
		t.Fatalf("%d scripts for %d waiters (limit %d): releases wake more than one waiter", scripts, waiters, limit)
	}
	t.Logf("%d waiters served in %s with %d scripts", waiters, took, scripts)
}

// TestReentrantPausedHolderLosesTheLock: a stop-the-world pause of the holder holds back its
// watchdog too, so its lock expires during the pause and the watchdog reports Lost.
func TestReentrantPausedHolderLosesTheLock(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 300 * time.Millisecond
	a := reentLocker(t, c, "inst-a", lease)
	b := reentLocker(t, c, "inst-b", lease)
	const key = "frozen"
	la, holder := heldUnderFault(t, a, "gc", key)
	took := make(chan *lock.Lease, 1)
	go func() {
		le, err := b.Acquire(context.Background(), key, lock.Options{Owner: "other", Wait: 2 * time.Second})
		if err != nil {
			t.Errorf("other owner during the pause: %v", err)
		}
		took <- le
	}()
	holder.Freeze(t.Context(), 3*lease)
	lb := <-took
	if lb == nil {
		t.FailNow()
	}
	select {
	case <-la.Lost():
	case <-time.After(lease):
		t.Fatal("after the pause the watchdog did not report the lock lost")
	}
	if err := la.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("frozen holder's release = %v, want ErrNotHeld", err)
	}
	if h := reentHash(t, c, key); h["inst-b:other"] != "1" {
		t.Fatalf("the frozen holder's release touched the new holder's lock: %v", h)
	}
	reentRelease(t, lb)
}

func TestReentrantWaitEndsWithContextAndWait(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := reentLocker(t, c, "inst", 5*time.Second)
	const key = "busy"
	held := reentAcquire(t, l, "holder", key, lock.Options{})
	defer reentRelease(t, held)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Acquire(ctx, key, lock.Options{Owner: "w1", Wait: 3 * time.Second})
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the cancelled wait took %s", d)
	}
	start = time.Now()
	_, err = l.Acquire(t.Context(), key, lock.Options{Owner: "w2", Wait: 200 * time.Millisecond})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("wait ran out = %v, want ErrNotObtained", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > time.Second {
		t.Fatalf("a 200ms wait took %s", d)
	}
}
