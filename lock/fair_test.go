package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/script"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// fairLocker builds a fair lock on c as process id (its clients carry the fault hook).
func fairLocker(t *testing.T, c *redis.Client, id string, lease time.Duration) *lock.Locker {
	t.Helper()
	locktest.Install(c)
	l, err := lock.NewFair(c, lock.WithInstanceID(id), lock.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// queue is the fair lock's queue of waiting fields, first first.
func queue(t *testing.T, c *redis.Client, key string) []string {
	t.Helper()
	name := "redisson_lock_queue:{" + key + "}"
	if strings.Contains(key, "{") { // Redisson keeps a hash tag the name already has
		name = "redisson_lock_queue:" + key
	}
	q, err := c.LRange(context.Background(), name, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// waitQueue waits until the queue has n waiters.
func waitQueue(t *testing.T, c *redis.Client, key string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		q := queue(t, c, key)
		if len(q) == n {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %v, want %d waiters", q, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// releaseFor releases h and waits for the waiter behind it, which sends its lease on got (nil
// when it failed); it answers that lease and how long after the release it came.
func releaseFor(t *testing.T, h *lock.Lease, got <-chan *lock.Lease) (*lock.Lease, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := h.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	le := <-got
	if le == nil {
		t.FailNow()
	}
	return le, time.Since(start)
}

func TestFairRedissonLayout(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 5 * time.Second
	a, b := fairLocker(t, c, "inst-a", lease), fairLocker(t, c, "inst-b", lease)
	const key = "fair-layout"
	la, err := a.Acquire(t.Context(), key, lock.Options{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.HGetAll(t.Context(), key).Val(); len(h) != 1 || h["inst-a:a"] != "1" {
		t.Fatalf("lock hash %v, want {inst-a:a: 1}", h)
	}
	got := make(chan *lock.Lease, 1)
	const wait = 2 * time.Second
	go func() {
		lb, err := b.Acquire(context.Background(), key, lock.Options{Owner: "b", Wait: wait})
		if err != nil {
			t.Errorf("B: %v", err)
		}
		got <- lb
	}()
	if q := waitQueue(t, c, key, 1); q[0] != "inst-b:b" {
		t.Fatalf("queue %v, want [inst-b:b]", q)
	}
	// B's deadline: the lock's TTL plus B's wait, from now.
	score := c.ZScore(t.Context(), "redisson_lock_timeout:{"+key+"}", "inst-b:b").Val()
	want := float64(time.Now().Add(lease + wait).UnixMilli())
	if d := score - want; d < -500 || d > 500 {
		t.Fatalf("B's deadline %0.f is %.0f ms from now+TTL+wait", score, d)
	}
	// B hears its own channel, as a Redisson client publishes it (through its process's pattern
	// subscription): a message there reaches one subscriber. The payload is not the unlock
	// message, so it wakes nobody.
	ch := "redisson_lock__channel:{" + key + "}:inst-b:b"
	deadline := time.Now().Add(time.Second)
	for c.Publish(t.Context(), ch, "probe").Val() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("nobody hears %s", ch)
		}
		time.Sleep(2 * time.Millisecond)
	}
	lb, took := releaseFor(t, la, got)
	if took > 200*time.Millisecond {
		t.Errorf("B got the lock %s after the release: the release did not wake it", took)
	}
	if q := queue(t, c, key); len(q) != 0 {
		t.Errorf("queue after B got the lock: %v", q)
	}
	if n := c.ZCard(t.Context(), "redisson_lock_timeout:{"+key+"}").Val(); n != 0 {
		t.Errorf("%d deadlines left after B got the lock", n)
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestFairServesInQueueOrderAcrossProcesses: waiters from two processes, queued one after the
// other, get the lock exactly in that order.
func TestFairServesInQueueOrderAcrossProcesses(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	ls := []*lock.Locker{fairLocker(t, c, "p0", 5*time.Second), fairLocker(t, c, "p1", 5*time.Second)}
	const key = "fair-order"
	h, err := ls[0].Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 8
	var mu sync.Mutex
	var served []string
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	var inside atomic.Int32
	for i := range waiters {
		owner := fmt.Sprint("w", i)
		l := ls[i%2]
		wg.Go(func() {
			le, err := l.Acquire(context.Background(), key, lock.Options{Owner: owner, Wait: 5 * time.Second})
			if err != nil {
				t.Errorf("%s: %v", owner, err)
				return
			}
			if inside.Add(1) != 1 {
				t.Errorf("%s is not alone in the critical section", owner)
			}
			mu.Lock()
			served = append(served, fmt.Sprintf("p%d:%s", i%2, owner))
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			inside.Add(-1)
			if err := le.Release(context.Background()); err != nil {
				t.Errorf("%s release: %v", owner, err)
			}
		})
		waitQueue(t, c, key, i+1) // the next one queues behind this one
	}
	order := queue(t, c, key)
	if err := h.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !slices.Equal(served, order) {
		t.Fatalf("served %v, queued %v", served, order)
	}
}

// TestFairWaiterThatGivesUpLeavesTheQueue: the waiters behind it move up, and the next release
// goes to them at once.
func TestFairWaiterThatGivesUpLeavesTheQueue(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 5*time.Second)
	const key = "fair-give-up"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	const short = 300 * time.Millisecond
	gaveUp := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), key, lock.Options{Owner: "quitter", Wait: short})
		gaveUp <- err
	}()
	waitQueue(t, c, key, 1)
	got := make(chan *lock.Lease, 1)
	go func() {
		le, err := l.Acquire(context.Background(), key, lock.Options{Owner: "patient", Wait: 5 * time.Second})
		if err != nil {
			t.Errorf("patient: %v", err)
		}
		got <- le
	}()
	waitQueue(t, c, key, 2)
	deadlines := "redisson_lock_timeout:{" + key + "}"
	before := c.ZScore(t.Context(), deadlines, "p:patient").Val()
	if err := <-gaveUp; !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("quitter: %v, want ErrNotObtained", err)
	}
	if q := queue(t, c, key); !slices.Equal(q, []string{"p:patient"}) {
		t.Fatalf("queue after the quitter left: %v", q)
	}
	after := c.ZScore(t.Context(), deadlines, "p:patient").Val()
	if moved := before - after; moved != float64(short.Milliseconds()) {
		t.Fatalf("the waiter behind moved up %.0f ms, want the quitter's wait %d ms", moved, short.Milliseconds())
	}
	le, took := releaseFor(t, h, got)
	if took > 200*time.Millisecond {
		t.Errorf("patient got the lock %s after the release", took)
	}
	_ = le.Release(t.Context())
}

// TestFairDeadWaiterHoldsTheLineForItsWait: a waiter that dies in the queue (its process
// crashes: nothing it sends arrives, not even its leaving, and its subscription ends) holds the
// line up for its wait at most: the release hands it the lock with a TTL of that wait, and the
// next waiter takes it when it expires. The dead waiter is in another process than the holder.
func TestFairDeadWaiterHoldsTheLineForItsWait(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 5*time.Second)
	other := fairLocker(t, c, "g", 5*time.Second)
	const key = "fair-dead"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder", Lease: 300 * time.Millisecond, ExplicitLease: true})
	if err != nil {
		t.Fatal(err)
	}
	const ghostWait = 500 * time.Millisecond
	ctx, ghost := locktest.Attach(t.Context(), locktest.Plan{})
	ghostDone := make(chan error, 1)
	go func() {
		_, err := other.Acquire(ctx, key, lock.Options{Owner: "ghost", Wait: 3 * time.Second})
		ghostDone <- err
	}()
	waitQueue(t, c, key, 1)
	// The ghost's process dies: nothing it sends arrives, and its subscription ends with it.
	ghost.Crash()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	// The ghost queued with a 3 s wait; shorten its deadline, and the TTL of a lock handed to
	// it, as if it had asked for ghostWait.
	deadlines := "redisson_lock_timeout:{" + key + "}"
	c.ZAdd(t.Context(), deadlines, redis.Z{Score: float64(time.Now().Add(ghostWait).UnixMilli()), Member: "g:ghost"})
	c.HSet(t.Context(), "golock_fair_grant:{"+key+"}", "g:ghost", ghostWait.Milliseconds())
	got := make(chan *lock.Lease, 1)
	go func() {
		le, err := l.Acquire(context.Background(), key, lock.Options{Owner: "alive", Wait: 3 * time.Second})
		if err != nil {
			t.Errorf("alive: %v", err)
		}
		got <- le
	}()
	waitQueue(t, c, key, 2)
	le, took := releaseFor(t, h, got)
	t.Logf("the dead waiter held the line up %s after the release", took)
	if took < ghostWait/2 {
		t.Errorf("alive got the lock %s after the release: it overtook a waiter whose wait had not run out", took)
	}
	if took > ghostWait+500*time.Millisecond {
		t.Errorf("alive got the lock %s after the release, want about the dead waiter's wait (%s)", took, ghostWait)
	}
	if err := <-ghostDone; !errors.Is(err, locktest.ErrCrashed) && !errors.Is(err, lock.ErrClosed) {
		t.Errorf("the dead waiter's Acquire = %v, want its crash or its Locker closed", err)
	}
	_ = le.Release(t.Context())
}

func TestFairReentryAndWatchdog(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const lease = 300 * time.Millisecond
	l := fairLocker(t, c, "p", lease)
	const key = "fair-reentry"
	outer, err := l.Acquire(t.Context(), key, lock.Options{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Acquire(t.Context(), key, lock.Options{Owner: "o"})
	if err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	if n := c.HGet(t.Context(), key, "p:o").Val(); n != "2" {
		t.Fatalf("hold count %s after re-entry, want 2", n)
	}
	time.Sleep(3 * lease)
	if n := outer.Renewals(); n < 2 {
		locktest.FailUnlessStalled(t, 5*time.Second, lease/3, "%d renewals over 3 leases", n)
	}
	if err := inner.Release(t.Context()); err != nil {
		locktest.FailUnlessStalled(t, 5*time.Second, lease/3, "inner release after 3 leases: %v", err)
	}
	if n := c.HGet(t.Context(), key, "p:o").Val(); n != "1" {
		t.Fatalf("hold count %s after the inner release, want 1", n)
	}
	if err := outer.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c.Exists(t.Context(), key).Val() != 0 {
		t.Fatal("lock still there after the last release")
	}
	if err := outer.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
}

func TestFairTryOnceLeavesNoQueueEntry(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 5*time.Second)
	const key = "fair-try"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder", Wait: setupWait})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(t.Context(), key, lock.Options{Owner: "other"}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("try while held: %v, want ErrNotObtained", err)
	}
	if q := queue(t, c, key); len(q) != 0 {
		t.Fatalf("a try without wait left %v in the queue", q)
	}
	_ = h.Release(t.Context())
}

// TestFairHandsOverWithinOneProcess: when the first waiter in the queue waits in the releasing
// process, the release script takes the lock for it, as its own acquire would (off the queue,
// its deadline gone, the hash field set), and wakes it in the process: the waiter holds the lock
// without a command of its own, and the one behind it is next.
func TestFairHandsOverWithinOneProcess(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	calls := locktest.Count(c)
	l := fairLocker(t, c, "p", 5*time.Second)
	const key = "fair-handover"
	// One round first, so the scripts are loaded and EVALSHA finds them.
	warm, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	_ = warm.Release(t.Context())
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder", Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var gots [2]chan *lock.Lease
	for i := range gots {
		gots[i] = make(chan *lock.Lease, 1)
		go func() {
			le, err := l.Acquire(t.Context(), key, lock.Options{Owner: fmt.Sprint("w", i), Wait: 3 * time.Second})
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			gots[i] <- le
		}()
		waitQueue(t, c, key, i+1)
	}
	time.Sleep(50 * time.Millisecond) // both asleep, waiting to be told
	deadlines := "redisson_lock_timeout:{" + key + "}"
	before := c.ZScore(t.Context(), deadlines, "p:w1").Val()
	calls.Reset()
	le, _ := releaseFor(t, h, gots[0])
	// The waiting process's heartbeat runs on a timer of its own (every 125 ms) and may land in
	// the count on a slow machine: it is not part of the handover.
	if n := calls.Load() - calls.Script(script.FairBeat); n != 1 {
		t.Errorf("release and handover sent %d commands besides heartbeats, want 1 (the release script)", n)
	}
	if q := queue(t, c, key); !slices.Equal(q, []string{"p:w1"}) {
		t.Errorf("queue after the handover: %v, want [p:w1]", q)
	}
	if h := c.HGetAll(t.Context(), key).Val(); len(h) != 1 || h["p:w0"] != "1" {
		t.Errorf("lock hash after the handover: %v, want p:w0 = 1", h)
	}
	if moved := before - c.ZScore(t.Context(), deadlines, "p:w1").Val(); moved != 1000 {
		t.Errorf("the waiter behind moved up %.0f ms, want one thread wait (1000 ms)", moved)
	}
	if _, err := c.ZScore(t.Context(), deadlines, "p:w0").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("the new holder still has a deadline in the queue (%v)", err)
	}
	le2, _ := releaseFor(t, le, gots[1])
	if err := le2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(t.Context(), key).Val(); n != 0 {
		t.Errorf("lock still there after the last release")
	}
}

// TestFairHandoverKeepsTheWaitersLease: a waiter that asked for its own lease gets it after a
// handover too (the script hands over with the Locker's default lease).
func TestFairHandoverKeepsTheWaitersLease(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 30*time.Second)
	const key = "fair-handover-lease"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lock.Lease, 1)
	go func() {
		le, err := l.Acquire(t.Context(), key, lock.Options{Owner: "w", Wait: 3 * time.Second, Lease: 2 * time.Second, ExplicitLease: true})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- le
	}()
	waitQueue(t, c, key, 1)
	le, _ := releaseFor(t, h, got)
	if ttl := c.PTTL(t.Context(), key).Val(); ttl <= 0 || ttl > 2*time.Second {
		t.Errorf("TTL after the handover %s, want the waiter's lease (2s)", ttl)
	}
	_ = le.Release(t.Context())
}

// TestFairHandoverRacingTheWaitersOwnAttempt: the release script hands the lock to the waiter,
// but the releasing process is paused before it can tell the waiter (locktest.Plan.PauseAfterReply
// on the release). Meanwhile the waiter's own timer fires and its attempt finds its own field in
// the lock: a re-entry, hold count 2, for one holder. The releaser, finding the waiter gone
// from its line, releases one hold for it: the count must end at 1, the waiter must hold the lock,
// and its one release must free it.
func TestFairHandoverRacingTheWaitersOwnAttempt(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 5*time.Second)
	const key = "fair-handover-race"
	loadScripts(t, l, key) // the paused release must be one EVALSHA, not NOSCRIPT (paused too) then EVAL
	// An explicit short lease: the waiter's estimated turn, when it looks again by itself.
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder", Lease: 300 * time.Millisecond, ExplicitLease: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lock.Lease, 1)
	go func() {
		le, err := l.Acquire(t.Context(), key, lock.Options{Owner: "w", Wait: 3 * time.Second})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- le
	}()
	waitQueue(t, c, key, 1)
	rctx, _ := locktest.Attach(t.Context(), locktest.Plan{PauseAfterReply: 700 * time.Millisecond})
	if err := h.Release(rctx); err != nil {
		t.Fatal(err)
	}
	le := <-got
	if le == nil {
		t.FailNow()
	}
	if n, err := c.HGet(t.Context(), key, "p:w").Int(); err != nil || n != 1 {
		t.Fatalf("the waiter's hold count %d (%v), want 1", n, err)
	}
	if ttl := c.PTTL(t.Context(), key).Val(); ttl < time.Second {
		t.Fatalf("the waiter's lock expires in %s: the releaser cut its lease to its own", ttl)
	}
	if err := le.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(t.Context(), key).Val(); n != 0 {
		t.Fatalf("lock still there after the waiter's one release: %v", c.HGetAll(t.Context(), key).Val())
	}
}

// TestFairQueueOutlivesItsWaitersByLittle: without a thread wait only this library's waiters are
// in the queue, and its keys live as long as the last waiter's wait and a little more (a quarter
// of it, at most a second), so a crowd's joins do not each push them out, and a crash of
// everyone leaves nothing behind for longer than that.
func TestFairQueueOutlivesItsWaitersByLittle(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 5*time.Second)
	const key = "fair-keep"
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	const wait = 2 * time.Second
	const slack = wait / 4
	got := make(chan *lock.Lease, 1)
	go func() {
		le, err := l.Acquire(context.Background(), key, lock.Options{Owner: "w", Wait: wait})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- le
	}()
	waitQueue(t, c, key, 1)
	for _, k := range []string{"redisson_lock_queue:{" + key + "}", "redisson_lock_timeout:{" + key + "}",
		"golock_fair_grant:{" + key + "}", "golock_fair_lag:{" + key + "}"} {
		ttl := c.PTTL(t.Context(), k).Val()
		if ttl <= wait-time.Second || ttl > wait+slack {
			t.Errorf("%s PTTL %v, want the waiter's wait %v and at most %v more", k, ttl, wait, slack)
		}
	}
	le, _ := releaseFor(t, h, got)
	_ = le.Release(t.Context())
}

// TestFairHandedOverLeasePushed (line.go's rule L4, fair.go's F2): a lock a release in another process hands
// over lives the waiter's grant TTL at first. A live holder pushes it out to its lease a third of
// the way in (watched: its watchdog's first round; explicit: a push of its own); one that cannot
// (crashed) closes Lost within the grant TTL, watched or not, instead of a lease later.
func TestFairHandedOverLeasePushed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		explicit, crash bool
	}{{"watched", false, false}, {"explicit", true, false}, {"watched-crashed", false, true}, {"explicit-crashed", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := locktest.New(t)
			rc := locktest.NewClient(t, srv)
			const lease, wait = 20 * time.Second, 900 * time.Millisecond
			a := fairLocker(t, locktest.NewClient(t, srv), "inst-a", lease)
			b := fairLocker(t, locktest.NewClient(t, srv), "inst-b", lease)
			key := "fair-push-" + c.name
			// handOver has b wait behind a holder in a, and a release it: the lock it hands over,
			// with b's holder.
			handOver := func() (*lock.Lease, *locktest.Holder) {
				holder, err := a.Acquire(t.Context(), key, lock.Options{Owner: "a"})
				if err != nil {
					t.Fatal(err)
				}
				ctx, h := locktest.Attach(t.Context(), locktest.Plan{})
				got := make(chan *lock.Lease, 1)
				go func() {
					le, err := b.Acquire(ctx, key, lock.Options{Owner: "b", Wait: wait, Lease: lease, ExplicitLease: c.explicit})
					if err != nil {
						t.Errorf("waiter: %v", err)
					}
					got <- le
				}()
				waitQueue(t, rc, key, 1)
				if err := holder.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				le := <-got
				if le == nil {
					t.FailNow()
				}
				return le, h
			}
			// The waiter may take the lock by an attempt of its own, racing the release (it then
			// has its lease at once): try again until the release hands it over.
			var le *lock.Lease
			var h *locktest.Holder
			for range 10 {
				if le, h = handOver(); rc.PTTL(t.Context(), key).Val() <= wait {
					break
				}
				t.Log("taken by the waiter's own attempt, not handed over: again")
				if err := le.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				le = nil
			}
			if le == nil {
				t.Fatal("never handed over in 10 tries")
			}
			took := time.Now()
			if c.crash {
				h.Crash()
			}
			if c.crash {
				select {
				case <-le.Lost():
					t.Logf("Lost closed %s after the crash", time.Since(took).Round(time.Millisecond))
				case <-time.After(5 * time.Second):
					t.Fatal("Lost still open 5 s after a crash left a lock handed over short unpushed")
				}
				return
			}
			deadline := time.Now().Add(5 * time.Second)
			for rc.PTTL(t.Context(), key).Val() <= wait {
				if time.Now().After(deadline) {
					t.Fatalf("PTTL %v 5 s after the hand-over: never pushed out to the lease %v", rc.PTTL(t.Context(), key).Val(), lease)
				}
				time.Sleep(20 * time.Millisecond)
			}
			select {
			case <-le.Lost():
				t.Fatal("a lease pushed out to its lease was lost")
			default:
			}
			if err := le.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFairLostGrantFoundByHeartbeat (rule F7): a release in another process takes the lock for
// the waiter and publishes its grant where nobody hears it, as a lost message would be; the
// waiter is rung by its process's next heartbeat (every 125 ms) and takes it, not when the lock
// handed to it runs out (its grant TTL, 500 ms here).
func TestFairLostGrantFoundByHeartbeat(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	holder := fairLocker(t, c, "a", 5*time.Second)
	waiter := fairLocker(t, c, "b", 5*time.Second)
	const key = "fair-lost-grant"
	if _, err := holder.Acquire(t.Context(), key, lock.Options{Owner: "h", Wait: setupWait}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		le  *lock.Lease
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		le, err := waiter.Acquire(t.Context(), key, lock.Options{Owner: "w", Wait: 5 * time.Second})
		got <- result{le, err, time.Now()}
	}()
	waitQueue(t, c, key, 1)
	// The holder's release script as its Locker sends it, but with an unlock channel nobody
	// listens to.
	keys := []string{key, script.Prefixed(script.RedissonQueuePrefix, key), script.Prefixed(script.RedissonTimeoutPrefix, key),
		"lost-channel:{" + key + "}", script.Prefixed(script.FairAlivePrefix, key), script.Prefixed(script.FairGrantsPrefix, key),
		script.Prefixed(script.FairLagPrefix, key)}
	released := time.Now()
	r, err := redis.NewScript(script.FairRelease).Run(t.Context(), c, keys, script.UnlockMessage, 5000, "a:h",
		released.UnixMilli(), "a:", 5000, 0, script.FairGrantMessage, 86_400_000).Slice()
	if err != nil || len(r) != 2 || r[1] != "b:w" {
		t.Fatalf("the release handed the lock to %v (%v), want b:w", r, err)
	}
	res := <-got
	if res.err != nil {
		t.Fatalf("the waiter: %v", res.err)
	}
	defer func() { _ = res.le.Release(context.WithoutCancel(t.Context())) }()
	if n, err := c.HGet(t.Context(), key, "b:w").Int(); err != nil || n != 1 {
		t.Fatalf("the waiter's hold count %d (%v), want 1", n, err)
	}
	if took := res.at.Sub(released); took >= 400*time.Millisecond {
		locktest.FailUnlessStalled(t, 5*time.Second, 250*time.Millisecond,
			"the waiter took the lock handed to it %s after the silent release, want within a heartbeat (125 ms), well before its grant TTL (500 ms) ran out", took)
	}
}

// gateKey marks a context whose first command (or pipeline) a gate holds (gateHook).
type gateKey struct{}

// gate holds the first command or pipeline sent under its context: before it is sent, or, with
// afterReply, once its reply has come back and before the sender reads it. reached closes when
// it holds it; open lets it go.
type gate struct {
	afterReply bool
	once       sync.Once
	reached    chan struct{}
	open       chan struct{}
}

func newGate(afterReply bool) *gate {
	return &gate{afterReply: afterReply, reached: make(chan struct{}), open: make(chan struct{})}
}

// hold runs send, held by the gate of ctx when ctx has one and this is its first command.
func hold(ctx context.Context, send func() error) error {
	g, _ := ctx.Value(gateKey{}).(*gate)
	first := false
	if g != nil {
		g.once.Do(func() { first = true })
	}
	if !first {
		return send()
	}
	if !g.afterReply {
		close(g.reached)
		<-g.open
		return send()
	}
	err := send()
	close(g.reached)
	<-g.open
	return err
}

// gateHook is the go-redis hook of gates.
type gateHook struct{}

func (gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return hold(ctx, func() error { return next(ctx, cmd) })
	}
}

func (gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return hold(ctx, func() error { return next(ctx, cmds) })
	}
}

// within waits for ch, failing the test when it has not come within a generous bound.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing within 10 s", what)
		panic("unreachable")
	}
}

// TestFairLateGrantLeavesAHoldBeingReleased: a release hands the lock to a waiter, but is slow
// to tell it (held after its reply); meanwhile the waiter's own attempt takes the lock handed to
// it, it does its work and starts its release, joined to its last writes (Lease.ReleaseAfter),
// and that pipeline is slow to leave. Then the first release reads its reply and looks for the
// waiter: gone from the line, it must not "give back the lock handed to a waiter that left":
// that waiter took it, and its last writes are still on their way. Giving it back then handed
// the lock to the next waiter while the first one's writes were still to land: two sales inside
// at once and one update lost (chaos case 7, fair, after the restock). The same holds for a grant
// message from another process that comes late (ringLocal).
func TestFairLateGrantLeavesAHoldBeingReleased(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "p", 5*time.Second)
	c.AddHook(gateHook{})
	const key = "fair-late-grant"
	loadScripts(t, l, key) // the held release must be one EVALSHA
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder", Lease: 300 * time.Millisecond, ExplicitLease: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]chan *lock.Lease{}
	for i, owner := range []string{"w", "x"} {
		got[owner] = make(chan *lock.Lease, 1)
		go func() {
			le, err := l.Acquire(t.Context(), key, lock.Options{Owner: owner, Wait: 8 * time.Second})
			if err != nil {
				t.Errorf("waiter %s: %v", owner, err)
			}
			got[owner] <- le
		}()
		waitQueue(t, c, key, i+1)
	}
	// The holder's release hands the lock to p:w in Redis, and is held before it reads that.
	late := newGate(true)
	released := make(chan error, 1)
	go func() { released <- h.Release(context.WithValue(t.Context(), gateKey{}, late)) }()
	within(t, "the holder's release", late.reached)
	// The waiter's own attempt (its heartbeat rings it: the lock's holder is its field) takes it.
	w := within(t, "waiter w", got["w"])
	if w == nil {
		t.FailNow()
	}
	// Its last write and its release go out together, and are held before they are sent.
	slow := newGate(false)
	wctx := context.WithValue(t.Context(), gateKey{}, slow)
	p := c.Pipeline()
	p.Set(wctx, "fair-late-grant-stock", "99", 0)
	wReleased := make(chan error, 1)
	go func() { wReleased <- w.ReleaseAfter(wctx, p) }()
	within(t, "the waiter's release", slow.reached)
	// Now the holder's release reads its reply: the lock was handed to p:w, which is not waiting.
	close(late.open)
	if err := within(t, "the holder's release", released); err != nil {
		t.Fatalf("the holder's release: %v", err)
	}
	if hash := c.HGetAll(t.Context(), key).Val(); len(hash) != 1 || hash["p:w"] != "1" {
		t.Errorf("the lock while p:w's last write and release are still to be sent: %v, want p:w = 1 "+
			"(given back for it, it went to the next waiter ahead of p:w's write)", hash)
	}
	close(slow.open)
	if err := within(t, "the waiter's release", wReleased); err != nil {
		t.Errorf("the waiter's release: %v, want nil (its hold was still its own)", err)
	}
	x := within(t, "waiter x", got["x"])
	if x == nil {
		t.FailNow()
	}
	if err := x.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(t.Context(), key).Val(); n != 0 {
		t.Errorf("lock still there after the last release: %v", c.HGetAll(t.Context(), key).Val())
	}
}

// loadScripts takes and releases key once, so that the scripts are loaded: a release sent next
// is one EVALSHA, not a NOSCRIPT reply and then an EVAL.
func loadScripts(t *testing.T, l *lock.Locker, key string) {
	t.Helper()
	warm, err := l.Acquire(t.Context(), key, lock.Options{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	_ = warm.Release(t.Context())
}

// TestFairBeatWakesAHeadOfAnotherProcess: a heartbeat that finds the lock free wakes the first
// waiter with the unlock message on its channel when it waits in another process (the dead ahead
// of it may have just been dropped by this very beat, and nobody else would tell it); one of the
// beating process it leaves to that process, and a lock that is held wakes nobody. Each check
// publishes a marker after the beat: the next message on the channel is the beat's, or the marker.
func TestFairBeatWakesAHeadOfAnotherProcess(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	const key = "fair-beat-wakes"
	channel := script.UnlockChannel(key) + ":b:w"
	msgs := subscribed(t, c, channel)
	now := time.Now().UnixMilli()
	queue, deadlines := script.Prefixed(script.RedissonQueuePrefix, key), script.Prefixed(script.RedissonTimeoutPrefix, key)
	c.RPush(t.Context(), queue, "g:ghost", "b:w")
	c.ZAdd(t.Context(), deadlines, redis.Z{Score: float64(now - 1), Member: "g:ghost"}, redis.Z{Score: float64(now + 5000), Member: "b:w"})
	beat := func(id string) []any {
		t.Helper()
		call := script.Fair{ID: id, LagCap: 86_400_000}.Beat(key, time.Now().UnixMilli(), time.Now().Add(time.Second).UnixMilli())
		r, err := redis.NewScript(script.FairBeat).Run(t.Context(), c, call.Keys, call.Args...).Slice()
		if err != nil {
			t.Fatalf("beat of %s: %v", id, err)
		}
		return r
	}
	next := func(marker string) string {
		t.Helper()
		if err := c.Publish(t.Context(), channel, marker).Err(); err != nil {
			t.Fatal(err)
		}
		return within(t, "a message on the waiter's channel", msgs).Payload
	}
	if r := beat("a"); r[0] != "b:w" || r[1] != int64(-2) {
		t.Fatalf("the beat read %v, want the dead ghost dropped, b:w first and the lock free", r)
	}
	if got := next("marker-1"); got != script.UnlockMessage {
		t.Fatalf("after a beat of another process that found the lock free, the waiter's channel said %q, want the unlock message", got)
	}
	if got := within(t, "the marker", msgs).Payload; got != "marker-1" {
		t.Fatalf("the waiter's channel said %q, want the marker", got)
	}
	beat("b")
	if got := next("marker-2"); got != "marker-2" {
		t.Fatalf("after a beat of the waiter's own process, its channel said %q: that process rings it itself", got)
	}
	c.HSet(t.Context(), key, "x:holder", 1)
	c.PExpire(t.Context(), key, 10*time.Second)
	beat("a")
	if got := next("marker-3"); got != "marker-3" {
		t.Fatalf("after a beat that found the lock held, the waiter's channel said %q: a held lock wakes nobody", got)
	}
}

// TestFairReleaseTellsALiveWaiterItDropped: a release that drops a waiter for its deadline while
// its process still says it is alive (the holds ahead outlasted the deadline Redisson's scripts
// wrote) tells it with the unlock message, so it looks again and queues at once rather than at
// its next look. The release finds nobody else in line and deletes the lock.
func TestFairReleaseTellsALiveWaiterItDropped(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	l := fairLocker(t, c, "a", 5*time.Second)
	const key = "fair-dropped-live"
	msgs := subscribed(t, c, script.UnlockChannel(key)+":b:w")
	h, err := l.Acquire(t.Context(), key, lock.Options{Owner: "h", Wait: setupWait})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	c.RPush(t.Context(), script.Prefixed(script.RedissonQueuePrefix, key), "b:w")
	c.ZAdd(t.Context(), script.Prefixed(script.RedissonTimeoutPrefix, key), redis.Z{Score: float64(now - 1), Member: "b:w"})
	c.HSet(t.Context(), script.Prefixed(script.FairAlivePrefix, key), "b", now+60_000)
	if err := h.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := within(t, "a message on the dropped waiter's channel", msgs).Payload; got != script.UnlockMessage {
		t.Fatalf("the dropped waiter's channel said %q, want the unlock message", got)
	}
	if q := queue(t, c, key); len(q) != 0 {
		t.Errorf("the queue after the release: %v, want the waiter dropped", q)
	}
}

// subscribed is channel's messages, once the subscription is confirmed; it ends with the test.
func subscribed(t *testing.T, c *redis.Client, channel string) <-chan *redis.Message {
	t.Helper()
	ps := c.Subscribe(t.Context(), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	return ps.Channel()
}
