package lock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// The waiter line of lua and fenced (line.go): one release hands the lock to one waiter,
// whichever process it waits in, and a waiter that dies holds the line up for its own wait only
// (line.go's rules L1–L5, waiting.go's rule 7).

// lineLockers builds one *Locker of mode per process, each on its own client (its own
// connections and pub/sub, as separate processes have), all counted by calls.
func lineLockers(t *testing.T, srv *redisClientSet, mode string, n int, lease time.Duration) []*Locker {
	t.Helper()
	var out []*Locker
	for i := range n {
		c := srv.client(t)
		l, err := newNamed(mode, c, nil, WithLease(lease), WithInstanceID(fmt.Sprintf("inst-%d", i)))
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
	return out
}

// redisClientSet opens clients on one server, each with its own command counter.
type redisClientSet struct {
	addr   string
	all    []*redis.Client
	counts []*locktest.Counter
}

func newClientSet(t *testing.T) *redisClientSet {
	t.Helper()
	srv := locktest.New(t)
	s := &redisClientSet{addr: srv.Addr}
	s.client(t)
	return s
}

func (s *redisClientSet) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	t.Cleanup(func() { _ = c.Close() }) // closing a test client: nothing to report
	s.all = append(s.all, c)
	s.counts = append(s.counts, locktest.Count(c))
	return c
}

// calls is the number of commands every client sent since the last reset, leaving out the
// set-up of a newly dialled connection (how many a pool dials depends on timing).
func (s *redisClientSet) calls() int64 {
	var n int64
	for _, c := range s.counts {
		n += c.Load() - c.Of("hello", "client", "auth", "select")
	}
	return n
}

func (s *redisClientSet) reset() {
	for _, c := range s.counts {
		c.Reset()
	}
}

// lineOf is the wait line of a lua or fenced *Locker.
func lineOf(l *Locker) *waitLine {
	if l, ok := l.impl.(*valueLocker); ok {
		return l.line
	}
	return nil
}

// TestLineHandsOverWithinOneProcess: with nobody waiting elsewhere, a release hands the lock
// straight to this process's next waiter: it holds the lock without a command of its own.
func TestLineHandsOverWithinOneProcess(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"lua", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			srv := newClientSet(t)
			l := lineLockers(t, srv, mode, 1, 5*time.Second)[0]
			key := "{line}:lock:local:" + mode
			first, err := l.Acquire(t.Context(), key, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *Lease, 1)
			go func() {
				le, err := l.Acquire(t.Context(), key, Options{Wait: 5 * time.Second})
				if err != nil {
					t.Errorf("waiter: %v", err)
				}
				got <- le
			}()
			time.Sleep(150 * time.Millisecond) // the waiter is in this process's line
			if err := classic("LineRelease").Load(t.Context(), srv.all[0]).Err(); err != nil {
				t.Fatal(err)
			}
			srv.reset()
			if err := first.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			le := <-got
			if le == nil {
				t.FailNow()
			}
			if n := srv.calls(); n != 1 {
				t.Errorf("the release and the waiter's acquisition sent %d commands, want 1 (the release script)", n)
			}
			if mode == "fenced" && le.Token() != first.Token()+1 {
				t.Errorf("token %d after %d, want the next", le.Token(), first.Token())
			}
			if err := le.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n, _ := srv.all[0].Exists(t.Context(), key).Result(); n != 0 {
				t.Errorf("lock key still there after the last release")
			}
		})
	}
}

// TestLineOneReleaseWakesOneWaiter: eight processes each have a waiter in line; each release
// hands the lock to the first in line only, in the order they queued, and the others send
// nothing while they wait.
func TestLineOneReleaseWakesOneWaiter(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"lua", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			srv := newClientSet(t)
			const n = 8
			ls := lineLockers(t, srv, mode, n+1, 30*time.Second)
			for _, l := range ls {
				// No look for a lost grant during the count: none is lost here, and on a slow
				// machine the look would come before the hand-over it is a fallback for.
				lineOf(l).lostGrant, lineOf(l).maxGrant = time.Minute, time.Minute
			}
			key := "{line}:lock:one:" + mode
			holder, err := ls[n].Acquire(t.Context(), key, Options{})
			if err != nil {
				t.Fatal(err)
			}
			line := script.LineOf(key)[1]
			leases, order := queueOneByOne(t, ls[:n], key, func(i int) {
				// They queue one after the other: each is in the Redis line before the next starts.
				waitFor(t, fmt.Sprintf("waiter %d in the Redis line", i), func() bool {
					return lineLen(t, srv, line) == i+1
				})
			})
			time.Sleep(200 * time.Millisecond)
			le := chainHandovers(t, srv, holder, leases, n, classic("LineRelease"), classic("FencedRenew"))
			// Per handover the release script alone: no waiter tried for nothing, and none held
			// long enough to push its lock out to its lease.
			if got := srv.calls(); got != n {
				t.Errorf("%d handovers sent %d commands, want %d (the releases): a release woke more than one waiter", n, got, n)
			}
			if got := order(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
				t.Fatalf("served in order %v, want the order they queued", got)
			}
			if err := le.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// queueOneByOne starts one waiter for key on each of ls, in order, calling queued(i) after
// starting waiter i (to wait until it has queued). The waiters' leases come on the channel as
// they get the lock; order tells the waiters' indices in the order they got it.
func queueOneByOne(t *testing.T, ls []*Locker, key string, queued func(i int)) (leases <-chan *Lease, order func() []int) {
	var (
		mu     sync.Mutex
		served []int
	)
	ch := make(chan *Lease, len(ls))
	for i, l := range ls {
		go func() {
			le, err := l.Acquire(t.Context(), key, Options{Wait: 20 * time.Second})
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				ch <- nil
				return
			}
			mu.Lock()
			served = append(served, i)
			mu.Unlock()
			ch <- le
		}()
		queued(i)
	}
	return ch, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(served)
	}
}

// chainHandovers counts only the hand-overs: with scripts loaded and every connection open, it
// resets srv's counters, then releases holder and each lease that comes from leases in turn, n
// times, and returns the last one (still held).
func chainHandovers(t *testing.T, srv *redisClientSet, holder *Lease, leases <-chan *Lease, n int, scripts ...*redis.Script) *Lease {
	t.Helper()
	for _, sc := range scripts {
		if err := sc.Load(t.Context(), srv.all[0]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range srv.all {
		if err := c.Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	srv.reset()
	le := holder
	for range n {
		if err := le.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if le = <-leases; le == nil {
			t.FailNow()
		}
	}
	return le
}

// TestLineHandedOverLockGetsItsLease: a lock handed to a waiter in another process lives
// min(lease, wait) at first; a holder still holding a third of the way in pushes it out to its
// lease.
func TestLineHandedOverLockGetsItsLease(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode     string
		explicit bool
	}{{"lua", true}, {"fenced", true}, {"fenced", false}} {
		name := c.mode
		if !c.explicit {
			name += "-watched" // pushed by its watchdog's first round
		}
		t.Run(name, func(t *testing.T) {
			srv := newClientSet(t)
			const lease, wait = 20 * time.Second, 900 * time.Millisecond
			ls := lineLockers(t, srv, c.mode, 2, lease)
			key := "{line}:lock:push:" + name
			holder, err := ls[0].Acquire(t.Context(), key, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *Lease, 1)
			go func() {
				le, err := ls[1].Acquire(t.Context(), key, Options{Wait: wait, ExplicitLease: c.explicit, Lease: lease})
				if err != nil {
					t.Errorf("waiter: %v", err)
				}
				got <- le
			}()
			// Released once the waiter is in the Redis line: a busy machine may take longer than a
			// quiet one to queue it, and a waiter not yet in line takes a free lock itself.
			waitFor(t, "the waiter in the Redis line", func() bool { return lineLen(t, srv, script.LineOf(key)[1]) == 1 })
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			le := <-got
			if le == nil {
				t.FailNow()
			}
			if d, err := srv.all[0].PTTL(t.Context(), key).Result(); err != nil || d > wait {
				t.Fatalf("handed over with PTTL %v (%v), want at most the waiter's wait %v", d, err, wait)
			}
			time.Sleep(wait / 2)
			if d, err := srv.all[0].PTTL(t.Context(), key).Result(); err != nil || d <= wait {
				t.Fatalf("PTTL %v (%v) after a third of the grant, want pushed out to the lease %v", d, err, lease)
			}
			if err := le.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLineHandedOverWatchedLeaseLost: a watched lease of a lock handed over short learns within
// the grant TTL that it could not push the lock out to its lease (its holder crashed): the push is
// its watchdog's first round, a third of the way into the grant TTL, and Lost closes once the lock
// may be gone, not after a round at lease/3 and its retries (about 18 s here).
func TestLineHandedOverWatchedLeaseLost(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	const lease, wait = 20 * time.Second, 900 * time.Millisecond
	ls := lineLockers(t, srv, "fenced", 2, lease)
	locktest.Install(srv.all[2]) // the waiter's client
	key := "{line}:lock:watched-push"
	holder, err := ls[0].Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, h := locktest.Attach(t.Context(), locktest.Plan{})
	got := make(chan *Lease, 1)
	go func() {
		le, err := ls[1].Acquire(ctx, key, Options{Wait: wait})
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- le
	}()
	waitQueued(t, srv.all[0], key, 1)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	le := <-got
	if le == nil {
		t.FailNow()
	}
	h.Crash()
	crashed := time.Now()
	if d, err := srv.all[0].PTTL(t.Context(), key).Result(); err != nil || d > wait {
		t.Fatalf("handed over with PTTL %v (%v), want at most the waiter's wait %v", d, err, wait)
	}
	select {
	case <-le.Lost():
		t.Logf("Lost closed %s after the crash (grant TTL at most %s)", time.Since(crashed).Round(time.Millisecond), wait)
	case <-time.After(5 * time.Second):
		t.Fatal("Lost still open 5 s after a crash left a lock handed over short unpushed")
	}
}

// TestLineSharesTurnsAcrossProcesses: a crowd of 8 in one process and a lone buyer in another.
// The crowd's process keeps the lock for at most its cohort of holders in a row before the lone
// buyer, first in the Redis line, gets its turn: with strict turns (cohort 1) the lone buyer gets
// about half, with a cohort as large as the crowd (the constant, 8) about as much as each of the
// crowd's buyers (a ninth), and never less than one turn in cohort + 1.
func TestLineSharesTurnsAcrossProcesses(t *testing.T) {
	t.Parallel()
	const crowdSize = 8
	for _, k := range []int{1, 4, core.Cohort} {
		t.Run(fmt.Sprintf("cohort-%d", k), func(t *testing.T) {
			t.Parallel()
			srv := newClientSet(t)
			ls := lineLockers(t, srv, "lua", 2, 5*time.Second)
			for _, l := range ls {
				setCohort(lineOf(l), k)
			}
			key := "{line}:lock:lopsided"
			stop := time.Now().Add(600 * time.Millisecond)
			var crowd, lone atomic.Int64
			var wg sync.WaitGroup
			buyer := func(l *Locker, n *atomic.Int64) {
				for time.Now().Before(stop) {
					le, err := l.Acquire(t.Context(), key, Options{Wait: 3 * time.Second})
					if err != nil {
						t.Errorf("acquire: %v", err)
						return
					}
					time.Sleep(200 * time.Microsecond)
					n.Add(1)
					if err := le.Release(context.Background()); err != nil {
						t.Errorf("release: %v", err)
						return
					}
				}
			}
			for range crowdSize {
				wg.Go(func() { buyer(ls[0], &crowd) })
			}
			wg.Go(func() { buyer(ls[1], &lone) })
			wg.Wait()
			c, o := crowd.Load(), lone.Load()
			share := float64(o) / float64(c+o)
			want := 1 / float64(min(k, crowdSize)+1)
			t.Logf("crowd of %d: %d acquisitions; lone buyer in another process: %d (%.3f, turns give %.3f)", crowdSize, c, o, share, want)
			// The lone buyer takes a moment to come back after each hold (the crowd may take
			// an extra turn meanwhile), so it may get less than its turns give, but not far less;
			// far more would mean the crowd's process was not keeping its cohort.
			if share < want/2.5 || share > want*1.6 {
				t.Fatalf("the lone buyer got %.3f of the acquisitions, want about %.3f", share, want)
			}
		})
	}
}

// TestLineGrantToAWaiterThatLeft: a grant heard for a waiter that has already left is passed
// on: with nobody else waiting, the lock is deleted, not left to expire.
func TestLineGrantToAWaiterThatLeft(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	l := lineLockers(t, srv, "lua", 1, 5*time.Second)[0].impl.(*valueLocker)
	key := "{line}:lock:left"
	value := l.line.newValue()
	// What a release elsewhere does when it hands over, for a waiter that is gone.
	if err := srv.all[0].Set(t.Context(), key, value, 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	l.line.heard(key + "\n" + value + "\n0")
	deadline := time.Now().Add(2 * time.Second)
	for {
		n, err := srv.all[0].Exists(t.Context(), key).Result()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock handed to the departed waiter is still there (%d, %v)", n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLineWaiterThatGivesUpLeavesTheLine: a waiter whose wait ends leaves the Redis line, so
// the release after it deletes the lock instead of handing it to nobody.
func TestLineWaiterThatGivesUpLeavesTheLine(t *testing.T) {
	t.Parallel()
	srv := newClientSet(t)
	ls := lineLockers(t, srv, "lua", 2, 5*time.Second)
	key := "{line}:lock:gaveup"
	holder, err := ls[0].Acquire(t.Context(), key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ls[1].Acquire(t.Context(), key, Options{Wait: 100 * time.Millisecond}); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("waiter: %v, want ErrNotObtained", err)
	}
	keys := script.LineOf(key)
	if n, err := srv.all[0].LLen(t.Context(), keys[1]).Result(); err != nil || n != 0 {
		t.Fatalf("the line still has %d entries (%v) after the waiter gave up", n, err)
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.all[0].Exists(t.Context(), key).Result(); n != 0 {
		t.Fatal("the lock is still there after the release")
	}
}

// TestLineDeadWaiterHoldsTheLineForItsWait kills a real process that waits in line (this test
// binary, run again as a waiter; SIGKILL, so it runs no clean-up), then releases the lock: the
// release hands it to the dead waiter, and the next waiter, in another process, gets it once
// the dead waiter's wait bound has passed, long before the lease would have.
func TestLineDeadWaiterHoldsTheLineForItsWait(t *testing.T) {
	t.Parallel()
	if os.Getenv("LOCKTEST_LINE_WAITER") != "" {
		return // the waiter's own run: see lineWaiterMain
	}
	for _, mode := range []string{"lua", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			srv := newClientSet(t)
			const lease, deadWait = 20 * time.Second, 1500 * time.Millisecond
			ls := lineLockers(t, srv, mode, 2, lease)
			key := "{line}:lock:dead:" + mode
			holder, err := ls[0].Acquire(t.Context(), key, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cmd := queuedWaiterProcess(t, "TestLineDeadWaiterHelper",
				"LOCKTEST_LINE_WAITER="+strings.Join([]string{srv.addr, mode, key, deadWait.String(), lease.String()}, ","))
			// The next waiter, in another process, queues behind the one about to die.
			got := acquiredAt(t, ls[1], key, 15*time.Second)
			time.Sleep(200 * time.Millisecond)
			took := killThenRelease(t, cmd, holder, got)
			t.Logf("the next waiter got the lock %v after the release (dead waiter's wait %v, lease %v)", took, deadWait, lease)
			if took > deadWait+2*time.Second {
				t.Fatalf("the line stalled %v behind a dead waiter whose wait was %v", took, deadWait)
			}
		})
	}
}

// queuedWaiterProcess starts this test binary again as a waiter process that runs only the test
// helper, with env (NAME=spec) set, and returns once it says "queued" on its stdout. The process
// is killed when the test ends, if the test has not killed it.
func queuedWaiterProcess(t *testing.T, helper, env string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // killed already when the test ran through
	queued := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "queued" {
				queued <- true
				return
			}
		}
		queued <- false
	}()
	select {
	case ok := <-queued:
		if !ok {
			t.Fatal("the waiter process ended before it queued")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter process never queued")
	}
	return cmd
}

// acquiredAt acquires key with l in a goroutine (waiting up to wait) and sends when it got the
// lock (zero: it did not, reported), releasing it at once.
func acquiredAt(t *testing.T, l *Locker, key string, wait time.Duration) <-chan time.Time {
	got := make(chan time.Time, 1)
	go func() {
		le, err := l.Acquire(t.Context(), key, Options{Wait: wait})
		if err != nil {
			t.Errorf("next waiter: %v", err)
			got <- time.Time{}
			return
		}
		got <- time.Now()
		_ = le.Release(context.Background()) // the test is over; a failed release changes nothing
	}()
	return got
}

// killThenRelease kills the waiter process, releases holder and returns how long after the
// release the next waiter (got, from acquiredAt) had the lock.
func killThenRelease(t *testing.T, cmd *exec.Cmd, holder *Lease, got <-chan time.Time) time.Duration {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: its exit status says so
	released := time.Now()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := <-got
	if at.IsZero() {
		t.FailNow()
	}
	return at.Sub(released)
}

// TestLineDeadWaiterHelper is the waiter process of TestLineDeadWaiterHoldsTheLineForItsWait:
// it queues for the lock, says so on stdout, and waits to be killed.
func TestLineDeadWaiterHelper(t *testing.T) {
	t.Parallel()
	spec := os.Getenv("LOCKTEST_LINE_WAITER")
	if spec == "" {
		t.Skip("run by TestLineDeadWaiterHoldsTheLineForItsWait as its waiter process")
	}
	f := strings.Split(spec, ",")
	wait, _ := time.ParseDuration(f[3])
	lease, _ := time.ParseDuration(f[4])
	c := redis.NewClient(&redis.Options{Addr: f[0]})
	l, err := newNamed(f[1], c, nil, WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		keys := script.LineOf(f[2])
		for {
			if n, _ := c.LLen(context.Background(), keys[1]).Result(); n > 0 {
				fmt.Println("queued")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err = l.Acquire(context.Background(), f[2], Options{Wait: wait})
	t.Fatalf("the waiter process was not killed in time: %v", err)
}

// holdRelease is a go-redis hook that, once armed, holds the next run of the line's release
// script until it is let go: the window in which the releasing process still has its holder.
type holdRelease struct {
	armed   atomic.Bool
	reached chan struct{}
	letGo   chan struct{}
}

func (h *holdRelease) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdRelease) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if len(a) > 1 && fmt.Sprint(a[1]) == classic("LineRelease").Hash() && h.armed.CompareAndSwap(true, false) {
			close(h.reached)
			<-h.letGo
		}
		return next(ctx, cmd)
	}
}

func (h *holdRelease) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLineWaiterArrivingDuringARelease: a waiter that comes while its process's holder is
// releasing sees that holder and sleeps until told; the release hands the lock to a waiter in
// another process, so it must tell this one itself. Before that was so, it slept its whole wait
// while the lock went free (found by chaos case 7 as a 5 s stall of one instance).
func TestLineWaiterArrivingDuringARelease(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"lua", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			srv := newClientSet(t)
			ls := lineLockers(t, srv, mode, 2, 10*time.Second)
			hold := &holdRelease{reached: make(chan struct{}), letGo: make(chan struct{})}
			srv.all[1].AddHook(hold) // ls[0]'s client
			key := "{line}:lock:arriving-" + mode
			first, err := ls[0].Acquire(t.Context(), key, Options{Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// A waiter in the other process, queued in the Redis line: the release goes to it.
			other := make(chan error, 1)
			go func() {
				le, err := ls[1].Acquire(t.Context(), key, Options{Wait: 5 * time.Second})
				if err == nil {
					err = le.Release(context.Background())
				}
				other <- err
			}()
			lineKey := script.Prefixed("golock_line", key)
			waitFor(t, "the other process's waiter in the Redis line", func() bool {
				n, err := srv.all[0].LLen(t.Context(), lineKey).Result()
				return err == nil && n == 1
			})
			hold.armed.Store(true)
			released := make(chan error, 1)
			go func() { released <- first.Release(context.Background()) }()
			<-hold.reached
			// While the release script is held, a new waiter comes in this process.
			const wait = 4 * time.Second
			start := time.Now()
			got := make(chan error, 1)
			go func() {
				le, err := ls[0].Acquire(t.Context(), key, Options{Wait: wait})
				if err == nil {
					err = le.Release(context.Background())
				}
				got <- err
			}()
			wl := lineOf(ls[0])
			waitFor(t, "the new waiter in its process's queue", func() bool {
				_, ok := wl.queue.headOf(key)
				return ok
			})
			time.Sleep(20 * time.Millisecond) // let it look and go to sleep
			close(hold.letGo)
			if err := <-released; err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := <-other; err != nil {
				t.Fatalf("the other process's waiter: %v", err)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter that came during the release: %v", err)
			}
			// Told at the release, it holds the lock within a hand-over; untold, it would look
			// again only at the end of its wait.
			if took := time.Since(start); took > wait/2 {
				t.Fatalf("the waiter that came during the release got the lock after %v (its wait: %v)", took, wait)
			}
		})
	}
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lineLen is the length of a Redis line (the test's own look, on the first server).
func lineLen(t *testing.T, srv *redisClientSet, line string) int {
	n, err := srv.all[0].LLen(context.Background(), line).Result()
	if err != nil {
		t.Errorf("LLEN %s: %v", line, err)
	}
	return int(n)
}

// setCohort sets the cohort (rule L3) of a line nobody waits in.
func setCohort(wl *waitLine, k int) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	wl.line = core.NewLine(k)
}
