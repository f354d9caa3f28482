package lock

import (
	"github.com/seckill-lab/seckill/lock/script"

	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The nominations of NewReentrant (nomination.go), from the line it shares with lua and fenced:
// a release sends one process's head to try, the lock and its unlock message stay Redisson's, a
// Redisson client's release (which names nobody) still wakes every process, and a nominee that
// died holds the others up for its own wait at most (nomination.go's rules N1–N3, waiting.go's rule 7, reentrant.go's R1–R2).

// TestNominationOneReleaseOneAttempt: eight processes queue one after the other behind a holder
// in a ninth. Each release costs the release script and one attempt, by the process first in
// line: nobody else tries, and they are served in the order they queued.
func TestNominationOneReleaseOneAttempt(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	const n = 8
	ls := lineLockers(t, srv, "reentrant", n+1, 30*time.Second)
	for _, l := range ls {
		// No look of a head left untold during the count: none is, and on a slow machine the
		// look would come before the hand-over it is a fallback for.
		nominatorOf(l).lostGrant = time.Minute
	}
	key := "{rline}:lock:one"
	holder, err := ls[n].Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	leases, order := queueOneByOne(t, ls[:n], key, func(i int) {
		waitFor(t, fmt.Sprintf("process %d in line", i), func() bool {
			return srv.all[0].LLen(t.Context(), script.LineOf(key)[1]).Val() == int64(i+1)
		})
		// And done with its attempts: it tries (and queues, in the same script), subscribes, then
		// tries once more (a release may have come before the subscription): 2 EVALSHA from its
		// client (ls[i]'s is srv.all[i+1]).
		waitFor(t, fmt.Sprintf("process %d asleep", i), func() bool {
			return srv.counts[i+1].Of("evalsha") >= 2
		})
	})
	time.Sleep(100 * time.Millisecond)
	le := chainHandovers(t, srv, holder, leases, n, classic("RLockRelease"))
	// Per handover the release and the nominee's attempt. With every process's head trying on
	// every release (Redisson's herd) the first release alone would cost 8 attempts.
	if got := srv.calls(); got != 2*n {
		var by []string
		for i, c := range srv.counts {
			by = append(by, fmt.Sprintf("client %d: %d evalsha, %d eval, %d in all", i, c.Of("evalsha"), c.Of("eval"), c.Load()))
		}
		t.Errorf("%d handovers sent %d commands, want %d (each release and one attempt): %s", n, got, 2*n, strings.Join(by, "; "))
	}
	if got := order(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("served in order %v, want the order they queued", got)
	}
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := srv.all[0].Exists(t.Context(), script.LineOf(key)[1], script.LineOf(key)[2]).Val(); got != 0 {
		t.Errorf("the line's keys are left after the last release: %d", got)
	}
}

// nominatorOf is the nominator (the place in the line) of a reentrant *Locker.
func nominatorOf(l *Locker) *nominator { return l.impl.(*reentrantLocker).nom }

// TestNominationRedissonReleaseWakesEveryone: a Redisson client's release (the plain RLock
// release script, which names nobody) wakes the waiting processes at once, not after their
// fallback, and one of them gets the lock.
func TestNominationRedissonReleaseWakesEveryone(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	const lease = 30 * time.Second
	ls := lineLockers(t, srv, "reentrant", 3, lease)
	key := "{rline}:lock:java"
	c := srv.all[0]
	// "Java" holds the lock, as RedissonLock writes it.
	const field = "java-client-uuid:1"
	if err := run(t.Context(), c, script.ReentrantAcquireCall(key, field, lease.Milliseconds())).Err(); err != redis.Nil {
		t.Fatalf("java acquire: %v", err)
	}
	got := make(chan time.Time, len(ls))
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i, l := range ls {
		wg.Go(func() {
			le, err := l.Acquire(t.Context(), key, Options{Wait: 20 * time.Second})
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				got <- time.Time{}
				return
			}
			got <- time.Now()
			if err := le.Release(context.Background()); err != nil {
				t.Errorf("release: %v", err)
			}
		})
	}
	waitFor(t, "three processes in line", func() bool {
		return c.LLen(t.Context(), script.LineOf(key)[1]).Val() == 3
	})
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	if err := run(t.Context(), c, script.ReentrantReleaseCall(key, field, lease.Milliseconds())).Err(); err != nil {
		t.Fatalf("java release: %v", err)
	}
	for range ls {
		at := <-got
		if at.IsZero() {
			t.FailNow()
		}
		// The fallbacks are the holder's PTTL (30 s) and a nominee's time (1 s): a wake-up by the
		// unlock message is far below both.
		if took := at.Sub(released); took > 800*time.Millisecond {
			t.Errorf("a waiter got the lock %v after Redisson's release", took)
		}
	}
}

// TestNominationDeadNomineeHoldsTheLineForItsWait: the process first in line is killed; the
// release tells it anyway (its entry is still live), and the next process, not told, gets the
// lock when it looks again (lostGrant, here 1 s), not after the lock's lease.
func TestNominationDeadNomineeHoldsTheLineForItsWait(t *testing.T) {
	t.Parallel()
	if os.Getenv("LOCKTEST_RLINE_WAITER") != "" {
		return // the waiter's own run: see TestNominationDeadWaiterHelper
	}
	srv := newClientSet(t)
	const lease, deadWait, look = 20 * time.Second, 3 * time.Second, time.Second
	ls := lineLockers(t, srv, "reentrant", 2, lease)
	nominatorOf(ls[1]).lostGrant = look
	key := "{rline}:lock:dead"
	holder, err := ls[0].Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := queuedWaiterProcess(t, "TestNominationDeadWaiterHelper",
		"LOCKTEST_RLINE_WAITER="+strings.Join([]string{srv.addr, key, deadWait.String(), lease.String()}, ","))
	got := acquiredAt(t, ls[1], key, 15*time.Second)
	waitFor(t, "the next process in line", func() bool {
		return srv.all[0].LLen(t.Context(), script.LineOf(key)[1]).Val() == 2
	})
	// Done with its attempts (tried and queued, subscribed, tried and queued again: 4 EVALSHA
	// from ls[1]'s client), so its next one is its look.
	waitFor(t, "the next process asleep", func() bool { return srv.counts[2].Of("evalsha") >= 4 })
	time.Sleep(100 * time.Millisecond)
	took := killThenRelease(t, cmd, holder, got)
	t.Logf("the next waiter got the lock %v after the release (its look every %v; lease %v)", took, look, lease)
	// It queued about 100 ms before the release, so it looks again about 0.9 s after it. Told at
	// once, it would have had the lock within milliseconds: the release told someone else.
	if took < look/2 {
		t.Errorf("the next waiter got the lock %v after the release: it was told, not the dead process first in line", took)
	}
	if took > look+2*time.Second {
		t.Fatalf("the line stalled %v behind a dead nominee (the others look every %v)", took, look)
	}
}

// TestNominationDeadWaiterHelper is the waiter process of
// TestNominationDeadNomineeHoldsTheLineForItsWait: it queues for the lock, says so, and waits
// to be killed.
func TestNominationDeadWaiterHelper(t *testing.T) {
	t.Parallel()
	spec := os.Getenv("LOCKTEST_RLINE_WAITER")
	if spec == "" {
		t.Skip("run by TestNominationDeadNomineeHoldsTheLineForItsWait as its waiter process")
	}
	f := strings.Split(spec, ",")
	wait, _ := time.ParseDuration(f[2])
	lease, _ := time.ParseDuration(f[3])
	c := redis.NewClient(&redis.Options{Addr: f[0]})
	l, err := newNamed("reentrant", c, nil, WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			if n, _ := c.LLen(context.Background(), script.LineOf(f[1])[1]).Result(); n > 0 {
				fmt.Println("queued")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err = l.Acquire(context.Background(), f[1], Options{Wait: wait})
	t.Fatalf("the waiter process was not killed in time: %v", err)
}

// TestNominationWaiterThatGivesUpLeavesTheLine: a process whose last waiter gives up takes itself
// out of the line, so no release nominates a process with nobody to take the lock up.
func TestNominationWaiterThatGivesUpLeavesTheLine(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	ls := lineLockers(t, srv, "reentrant", 2, 30*time.Second)
	key := "{rline}:lock:leave"
	holder, err := ls[0].Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ls[1].Acquire(t.Context(), key, Options{Wait: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("the waiter got a held lock")
	}
	c := srv.all[0]
	if n := c.LLen(t.Context(), script.LineOf(key)[1]).Val(); n != 0 {
		t.Errorf("the line holds %d processes after the only waiter gave up", n)
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNominationUnlockMessageOnlyWhereRedissonListens: among this library's processes alone a
// release sends one message, to the process it names; once a client listens on the unlock
// channel itself, as Redisson's waiters do, the unlock message follows.
func TestNominationUnlockMessageOnlyWhereRedissonListens(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	ls := lineLockers(t, srv, "reentrant", 2, 30*time.Second)
	for _, l := range ls {
		// No look of a head in line while it is told: on a loaded machine the look can come
		// first, take the lock, and the late nomination is then passed on, one message more.
		nominatorOf(l).lostGrant = time.Minute
	}
	key := "{rline}:lock:announce"
	c := srv.all[0]
	// A pattern subscriber sees every message on the channels and is not counted by NUMSUB.
	watch := c.PSubscribe(t.Context(), globEscape(unlockChannel(key)), globEscape(script.NominationChannel(key, ""))+"*")
	t.Cleanup(func() { _ = watch.Close() })
	for range 2 {
		if _, err := watch.ReceiveTimeout(t.Context(), 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	heard := func() []string {
		var got []string
		for {
			m, err := watch.ReceiveTimeout(t.Context(), 200*time.Millisecond)
			if err != nil {
				return got // nothing more within 200 ms
			}
			if msg, ok := m.(*redis.Message); ok {
				got = append(got, msg.Channel+" "+msg.Payload)
			}
		}
	}
	// a holds, b waits in line; a's release names b, which takes the lock and releases it.
	pass := func(a, b *Locker) {
		le, err := a.Acquire(t.Context(), key, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Lease, 1)
		go func() {
			lb, err := b.Acquire(t.Context(), key, Options{Wait: 10 * time.Second})
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			got <- lb
		}()
		waitFor(t, "the waiter in line", func() bool { return c.LLen(t.Context(), script.LineOf(key)[1]).Val() == 1 })
		if err := le.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		lb := <-got
		if lb == nil {
			t.FailNow()
		}
		if err := lb.Release(context.Background()); err != nil { // done before the messages are read
			t.Fatal(err)
		}
	}
	pass(ls[0], ls[1])
	want := []string{script.NominationChannel(key, nominatorOf(ls[1]).id) + " " + nominated}
	if got := heard(); !slices.Equal(got, want) {
		t.Errorf("with nobody on the unlock channel a release sent %q, want %q", got, want)
	}
	java := c.Subscribe(t.Context(), unlockChannel(key))
	t.Cleanup(func() { _ = java.Close() })
	if _, err := java.ReceiveTimeout(t.Context(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	pass(ls[1], ls[0])
	// The nomination, then the unlock message. The waiter's own release announces itself too,
	// with nobody in line to name; and when the waiter took the lock on its own before it heard
	// its nomination (its look right after it first subscribes can come after the release), its
	// process passes the nomination on, with one unlock message more.
	want = []string{script.NominationChannel(key, nominatorOf(ls[0]).id) + " " + nominated,
		unlockChannel(key) + " " + unlockMessage, unlockChannel(key) + " " + unlockMessage}
	got := heard()
	if len(got) < len(want) || len(got) > len(want)+1 || !slices.Equal(got[:len(want)], want) ||
		slices.ContainsFunc(got[len(want):], func(m string) bool { return m != want[1] }) {
		t.Errorf("with a Redisson waiter on the unlock channel a release sent %q, want %q (and at most one unlock message more)", got, want)
	}
}
