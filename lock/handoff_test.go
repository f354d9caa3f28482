package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// The handoff (handoff.go): waiters of one Locker wait in line per key, only the head contends
// in Redis, a release wakes it at once, and a lock that is never released still passes on when
// it expires (waiting.go rules 3–6). Each test runs on real redis-server processes (when
// installed).

// hoServers is one data Redis and three masters, shared by the sub-tests of a test (each uses
// its own keys), with a counter of the commands sent through their clients.
type hoServers struct {
	data    *redis.Client
	masters []*redis.Client
	calls   *locktest.Counter
}

func hoStart(t *testing.T) hoServers {
	t.Helper()
	all := locktest.NewN(t, 4)
	s := hoServers{data: locktest.NewClient(t, all[0])}
	for _, srv := range all[1:] {
		s.masters = append(s.masters, locktest.NewClient(t, srv))
	}
	s.calls = locktest.Count(append(s.masters, s.data)...)
	return s
}

// hoLockers builds one Locker of mode per "process" (instance) on srv, closed when the test
// ends.
func hoLockers(t *testing.T, srv hoServers, mode string, instances int, lease time.Duration) ([]*Locker, *redis.Client, []*redis.Client) {
	t.Helper()
	data, masters := srv.data, srv.masters
	var out []*Locker
	for i := range instances {
		l, err := newNamed(mode, data, universal(masters...), WithLease(lease),
			WithInstanceID(fmt.Sprintf("inst-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := l.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		out = append(out, l)
	}
	return out, data, masters
}

var waitingModes = []string{"lua", "reentrant", "fenced", "multilock", "redlock"}

// TestHandoffServesOneProcessInArrivalOrder: waiters that arrive one after the other get the
// lock in that order, never two at once, each within milliseconds of the previous release
// (although the lease, the PTTL fallback, is seconds), and while they wait they send nothing.
func TestHandoffServesOneProcessInArrivalOrder(t *testing.T) {
	t.Parallel()
	srv := hoStart(t)
	for _, mode := range waitingModes {
		t.Run(mode, func(t *testing.T) {
			const lease, waiters = 5 * time.Second, 6
			ls, _, _ := hoLockers(t, srv, mode, 1, lease)
			l := ls[0]
			if wl := lineOf(l); wl != nil {
				// The head of lua's and fenced's line, queued in Redis behind a holder it did not
				// see take the lock (a single attempt), looks again every core.LostGrantBound in case
				// its grant was lost; on a busy machine one look can fall in the quiet window.
				wl.lostGrant, wl.maxGrant = time.Minute, time.Minute
			}
			if mode == "reentrant" {
				// The same for reentrant's nominations (nomination.go's rule N3): the
				// process in line looks again every core.LostGrantBound unless told.
				nominatorOf(l).lostGrant = time.Minute
			}
			key := "{ho}:lock:" + mode
			// A wait, though the lock is free: a single attempt has 350 ms to be answered, which
			// three masters on a busy machine may take.
			first, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "first"), Wait: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu      sync.Mutex
				order   []int
				inside  atomic.Int32
				overlap atomic.Int32
				wg      sync.WaitGroup
			)
			// The waiters report through t.Errorf: they must be done before the test is, even
			// when it stops early.
			t.Cleanup(wg.Wait)
			for i := range waiters {
				wg.Go(func() {
					le, err := l.Acquire(t.Context(), key, Options{Owner: own(l, fmt.Sprint("w", i)), Wait: 5 * time.Second})
					if err != nil {
						t.Errorf("waiter %d: %v", i, err)
						return
					}
					if inside.Add(1) > 1 {
						overlap.Add(1)
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
					inside.Add(-1)
					if err := le.Release(context.Background()); err != nil {
						t.Errorf("waiter %d release: %v", i, err)
					}
				})
				waitInQueue(t, l, key, i+1) // arrive one after the other
			}
			time.Sleep(100 * time.Millisecond)
			srv.calls.Reset()
			time.Sleep(200 * time.Millisecond)
			if n := srv.calls.Load(); n != 0 {
				t.Errorf("%d waiters sent %d commands in 200ms of waiting: they poll", waiters, n)
			}
			start := time.Now()
			if err := first.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			took := time.Since(start)
			if overlap.Load() != 0 {
				t.Fatalf("%d overlaps", overlap.Load())
			}
			for i, w := range order {
				if w != i {
					t.Fatalf("served in order %v, want arrival order", order)
				}
			}
			if took > time.Second {
				t.Fatalf("%d handoffs took %s: a waiter fell back on the %s PTTL", waiters, took, lease)
			}
			t.Logf("%s: %d waiters served in arrival order in %s", mode, waiters, took)
		})
	}
}

// TestHandoffExpiredLockPassesOn: a holder that never releases (a crash, or business time
// longer than the lease without a watchdog) does not block the line beyond its lease: the head
// takes the lock when it expires, as a polling waiter would. For lua this is the overlap of
// row 6 of docs/lab.md, which must stay.
func TestHandoffExpiredLockPassesOn(t *testing.T) {
	t.Parallel()
	srv := hoStart(t)
	for _, mode := range waitingModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // own keys and lockers; the modes run side by side
			const lease = 300 * time.Millisecond
			ls, _, _ := hoLockers(t, srv, mode, 2, lease)
			key := "{ho}:lock:expire:" + mode
			// A is never released. It takes a free lock, within a wait: one attempt on Redlock's
			// masters gives each a few milliseconds, which a busy machine does not always keep.
			if _, err := ls[0].Acquire(t.Context(), key, Options{Owner: own(ls[0], "a"), Lease: lease, ExplicitLease: true, Wait: 3 * time.Second}); err != nil {
				t.Fatal(err)
			}
			for i, l := range ls { // a waiter in the holder's process and one in another
				start := time.Now()
				_, err := l.Acquire(t.Context(), key, Options{Owner: own(l, fmt.Sprint("b", i)), Wait: 3 * time.Second, Lease: lease, ExplicitLease: true})
				if err != nil {
					t.Fatalf("waiter in process %d: %v", i, err)
				}
				if d := time.Since(start); d > lease+500*time.Millisecond {
					t.Errorf("waiter in process %d got the expired lock after %s (lease %s)", i, d, lease)
				}
				// Never released either: the next waiter takes it when it expires.
			}
		})
	}
}

// TestHandoffWakesOtherProcesses: a release in one process wakes the head of another at once
// (through the PUBLISH), so two processes with a crowd each both keep getting the lock: neither
// line starves.
func TestHandoffWakesOtherProcesses(t *testing.T) {
	t.Parallel()
	srv := hoStart(t)
	for _, mode := range waitingModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // own keys and lockers; the modes run side by side
			const lease, per = 5 * time.Second, 4
			ls, _, _ := hoLockers(t, srv, mode, 2, lease)
			key := "{ho}:lock:procs:" + mode
			var got [2]atomic.Int64
			var inside, overlap atomic.Int32
			stop := time.Now().Add(600 * time.Millisecond)
			var wg sync.WaitGroup
			for p, l := range ls {
				for i := range per {
					wg.Go(func() {
						for time.Now().Before(stop) {
							le, err := l.Acquire(t.Context(), key, Options{Owner: own(l, fmt.Sprintf("p%dw%d", p, i)), Wait: 3 * time.Second})
							if err != nil {
								t.Errorf("process %d waiter %d: %v", p, i, err)
								return
							}
							if inside.Add(1) > 1 {
								overlap.Add(1)
							}
							time.Sleep(200 * time.Microsecond)
							inside.Add(-1)
							got[p].Add(1)
							if err := le.Release(context.Background()); err != nil {
								t.Errorf("release: %v", err)
								return
							}
						}
					})
				}
			}
			wg.Wait()
			if overlap.Load() != 0 {
				t.Fatalf("%d overlaps", overlap.Load())
			}
			// Across processes the heads race for each release, so the split is not even (in one
			// test binary the order in which the two subscribers are woken even biases it); what
			// must hold is that neither line starves.
			a, b := got[0].Load(), got[1].Load()
			if min(a, b)*20 < a+b {
				t.Fatalf("acquisitions per process: %d and %d: one process starves the other", a, b)
			}
			t.Logf("%s: %d and %d acquisitions in 600ms", mode, a, b)
		})
	}
}

// TestHandoffReentryDoesNotQueue: an owner that holds a reentrant lock re-enters at once even
// while others wait in line for it (it must not wait behind waiters for its own lock).
func TestHandoffReentryDoesNotQueue(t *testing.T) {
	t.Parallel()
	ls, _, _ := hoLockers(t, hoStart(t), "reentrant", 1, 5*time.Second)
	l := ls[0]
	key := "{ho}:lock:reenter"
	outer, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "owner")})
	if err != nil {
		t.Fatal(err)
	}
	waiter := make(chan error, 1)
	go func() {
		le, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "other"), Wait: 3 * time.Second})
		if err == nil {
			err = le.Release(context.Background())
		}
		waiter <- err
	}()
	time.Sleep(50 * time.Millisecond) // the other owner waits in line
	start := time.Now()
	inner, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "owner"), Wait: time.Second})
	if err != nil {
		t.Fatalf("re-entry while another waits: %v", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("re-entry took %s: it queued behind the waiter", d)
	}
	for _, le := range []*Lease{inner, outer} {
		if err := le.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-waiter; err != nil {
		t.Fatalf("waiter after both releases: %v", err)
	}
}

// TestHandoffWaitEnds: a waiter behind others gives up at its wait or when its context ends,
// and leaves the line without blocking the ones behind it; Wait 0 is one attempt.
func TestHandoffWaitEnds(t *testing.T) {
	t.Parallel()
	srv := hoStart(t)
	for _, mode := range waitingModes {
		t.Run(mode, func(t *testing.T) {
			ls, _, _ := hoLockers(t, srv, mode, 1, 5*time.Second)
			l := ls[0]
			key := "{ho}:lock:ends:" + mode
			held, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "holder")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "once")}); !errors.Is(err, ErrNotObtained) {
				t.Fatalf("one attempt on a held lock: %v, want ErrNotObtained", err)
			}
			short := make(chan error, 1)
			go func() {
				_, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "short"), Wait: 100 * time.Millisecond})
				short <- err
			}()
			cctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
			defer cancel()
			cancelled := make(chan error, 1)
			go func() {
				_, err := l.Acquire(cctx, key, Options{Owner: own(l, "cancelled"), Wait: 5 * time.Second})
				cancelled <- err
			}()
			last := make(chan error, 1)
			go func() {
				time.Sleep(20 * time.Millisecond)
				le, err := l.Acquire(t.Context(), key, Options{Owner: own(l, "last"), Wait: 5 * time.Second})
				if err == nil {
					err = le.Release(context.Background())
				}
				last <- err
			}()
			if err := <-short; !errors.Is(err, ErrNotObtained) {
				t.Fatalf("short wait: %v, want ErrNotObtained", err)
			}
			if err := <-cancelled; !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("cancelled wait: %v, want ErrNotObtained and DeadlineExceeded", err)
			}
			start := time.Now()
			if err := held.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := <-last; err != nil {
				t.Fatalf("the waiter behind the ones that gave up: %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("the last waiter got the lock %s after the release", d)
			}
		})
	}
}

// queueOf is the in-process queue l's waiters for a key wait in first (a multilock's: its first
// part's).
func queueOf(l *Locker) *handoff {
	switch k := l.impl.(type) {
	case *valueLocker:
		return k.line.queue
	case *reentrantLocker:
		return k.queue
	case *multiLocker:
		return k.parts[0].queue
	case *redlockLocker:
		return k.queue
	}
	return nil
}

// waitInQueue waits until n of l's waiters are in key's queue.
func waitInQueue(t *testing.T, l *Locker, key string, n int) {
	t.Helper()
	h := queueOf(l)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		got := 0
		if q := h.queues[key]; q != nil {
			got = len(q.places)
		}
		h.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters in %s's queue after 10 s, want %d", got, key, n)
		}
	}
}
