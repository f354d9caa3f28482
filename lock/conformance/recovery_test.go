package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestReleaseWithAnEndedContextStillReleases: a Release whose context had ended ends the lease
// at once (Lost closed) and sends the release in the background; the next Release answers how it
// went, and only a Release after that one is "already released".
func TestReleaseWithAnEndedContextStillReleases(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	rdb := redis.UniversalClient(c)
	for name, build := range map[string]func() (*lock.Locker, error){
		"lua":       func() (*lock.Locker, error) { return lock.NewLua(rdb) },
		"reentrant": func() (*lock.Locker, error) { return lock.NewReentrant(rdb) },
		"fair":      func() (*lock.Locker, error) { return lock.NewFair(rdb) },
		"fenced":    func() (*lock.Locker, error) { return lock.NewFenced(rdb) },
		"multilock": func() (*lock.Locker, error) { return lock.NewMultilock([]redis.UniversalClient{rdb}) },
	} {
		t.Run(name, func(t *testing.T) {
			l, err := build()
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			key := "{retry}:lock:" + name
			lease, err := l.Acquire(t.Context(), key, lock.Options{Lease: 30 * time.Second})
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			cancelled, cancel := context.WithCancel(t.Context())
			cancel()
			if err := lease.Release(cancelled); !errors.Is(err, context.Canceled) {
				t.Fatalf("a release with a cancelled context: %v, want context.Canceled", err)
			}
			select {
			case <-lease.Lost():
			default:
				t.Fatal("Lost still open after a release with a cancelled context")
			}
			// The release goes on in the background; the next call waits for it and answers how
			// it ended.
			if err := lease.Release(t.Context()); err != nil {
				t.Fatalf("the release after one whose context had ended: %v", err)
			}
			if n := c.Exists(t.Context(), key).Val(); n != 0 {
				t.Fatal("the key is still there after the release")
			}
			if err := lease.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("a third release: %v, want ErrNotHeld", err)
			}
		})
	}
}

// relookBound is the longest a waiter of kind k takes to see that a lock has become free when no
// release tells it (waiting.go): core.LostGrantBound (250 ms) for the line of lua and fenced (line.go's rule L5),
// reentrant's place in the line (nomination.go's N3) and the fair queue (fair.go's F3 and F6, a heartbeat's
// period on top); fenced-rfenced and multilock sleep until the holder's PTTL (rule 5), within the
// same bound; redlock looks again when a quorum of the holder's keys would expire, but the bound
// its simulation keeps (docs/simulate.md) is a lease.
func relookBound(k conformanceKind, lease time.Duration) time.Duration {
	switch k.name {
	case "redlock", "redlock-fenced":
		return lease
	case "fair":
		return 250*time.Millisecond + 125*time.Millisecond
	}
	return 250 * time.Millisecond
}

// crash is one run of the crash: the survivor's waiter's acquisition and when, measured from
// the crash, the lock became free (the dead holder's key expired on every master the kind needs,
// and nothing the dead process left holds the waiter up any more, waiting.go rules 7 and 8).
type crash struct {
	took, freeAfter time.Duration
}

// crashProcess runs the crash: a doomed process (a Locker whose connections go through proxies)
// queues five waiters (each with wait) behind a holder, the doomed one when deadHolder, else the
// survivor's; a waiter of a third process queues behind them; the doomed process dies, and the
// survivor's holder (if it is the survivor's) releases.
func crashProcess(t *testing.T, k conformanceKind, deadHolder bool, lease, wait time.Duration) crash {
	n := 1
	if k.masters {
		n = 3
	}
	servers := locktest.NewN(t, n)
	var direct, doomedClients []redis.UniversalClient
	var proxies []*proxy
	var sent atomic.Int64
	for _, s := range servers {
		direct = append(direct, locktest.NewClient(t, s))
		p := newProxy(t, s.Addr)
		proxies = append(proxies, p)
		dc := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
		t.Cleanup(func() { _ = dc.Close() })
		doomedClients = append(doomedClients, dc)
	}
	survivor, err := k.build(direct[0], direct, append(slices.Clone(k.opts), lock.WithInstanceID("survivor"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer survivor.Close()
	doomed, err := k.build(doomedClients[0], doomedClients, append(slices.Clone(k.opts), lock.WithInstanceID("doomed"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer doomed.Close()
	// The waiter behind is in a third process: a release then hands the lock on across processes
	// (to the first of the line, a dead waiter when the doomed one queued first), not to a waiter
	// of its own process (the cohort, line.go's rule L3), which would pass the dead ones by.
	bystander, err := k.build(direct[0], direct, append(slices.Clone(k.opts), lock.WithInstanceID("bystander"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Close()
	owner := func(o string) string {
		if k.owners {
			return o
		}
		return ""
	}
	const key = "crash"
	ctx := context.Background()
	holderLocker := survivor
	if deadHolder {
		holderLocker = doomed
	}
	holder, err := holderLocker.Acquire(ctx, key, lock.Options{Owner: owner("holder"), Lease: lease, Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, dc := range doomedClients {
		dc.AddHook(counter{&sent})
	}
	for i := range 5 {
		before := sent.Load()
		go func() {
			// A lease of a second, as the holder's: whichever of them holds the lock when the
			// process dies, the lock outlives it by that much at most.
			_, _ = doomed.Acquire(ctx, key, lock.Options{Owner: owner(fmt.Sprint("w", i)), Wait: wait, Lease: lease})
		}()
		// Each waiter has made its first attempt (and queued where its kind queues) before the next.
		deadline := time.Now().Add(5 * time.Second)
		for sent.Load() == before && i == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the doomed process's first waiter sent nothing")
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := make(chan time.Time, 1)
	go func() {
		le, err := bystander.Acquire(ctx, key, lock.Options{Owner: owner("behind"), Wait: 10 * time.Second})
		got <- time.Now()
		if err != nil {
			t.Errorf("the survivor's waiter: %v", err)
			return
		}
		_ = le.Release(ctx)
	}()
	time.Sleep(100 * time.Millisecond) // the survivor's waiter is in line behind the doomed ones
	for _, p := range proxies {
		p.close() // the doomed process dies: its connections are cut, nothing it sends arrives
	}
	crashed := time.Now()
	var free time.Duration
	if deadHolder {
		free = freeAfter(t, k, direct, key)
		// The dead waiters of lua and fenced never queued in the Redis line: they waited in
		// their process behind its holder (waiting.go rule 3), so they hold nobody up. The fair
		// queue's are dropped once their process has not said it is alive for aliveFor (fair.go's rule F6).
		if k.name == "fair" {
			free = max(free, aliveFor)
		}
	} else if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return crash{took: (<-got).Sub(crashed), freeAfter: free}
}

// aliveFor is how long a fair-lock process is taken for alive after it last said so (fair.go).
const aliveFor = 500 * time.Millisecond

// freeAfter is how long after now the dead holder's lock expires where the kind needs it: on its
// one server, on every master (multilock), on a quorum (redlock).
func freeAfter(t *testing.T, k conformanceKind, cs []redis.UniversalClient, key string) time.Duration {
	var ttls []time.Duration
	for _, c := range cs {
		d, err := c.PTTL(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttls = append(ttls, max(d, 0))
	}
	slices.Sort(ttls)
	switch k.name {
	case "redlock", "redlock-fenced":
		return ttls[len(ttls)/2] // a quorum of 3 is free
	}
	return ttls[len(ttls)-1]
}

// TestSellsAgainSoonAfterAFreeze: Redis stops answering (as under SIGSTOP) while the holder
// releases; the release gives up at its context's end. Within a second of Redis answering again
// the waiter has the lock, in every kind: the library sent the release again in the background
// (before, the lock stayed until its lease ran out: 30 s by default, as the probe saw for
// reentrant and fair after a 5 s freeze).
func TestSellsAgainSoonAfterAFreeze(t *testing.T) {
	t.Parallel()
	for _, k := range conformanceKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, k)
			a, b := r.locker(), r.locker()
			ctx := context.Background()
			holder := acquire(t, a, "freeze", lock.Options{})
			got := make(chan time.Time, 1)
			go func() {
				le, err := b.Acquire(ctx, "freeze", lock.Options{Wait: 20 * time.Second})
				got <- time.Now()
				if err != nil {
					t.Errorf("waiter: %v", err)
					return
				}
				_ = le.Release(ctx)
			}()
			time.Sleep(200 * time.Millisecond) // the waiter waits
			r.freeze()
			rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err := holder.Release(rctx)
			cancel()
			if !errors.Is(err, lock.ErrUnavailable) {
				t.Fatalf("release on a frozen server: %v, want ErrUnavailable", err)
			}
			time.Sleep(500 * time.Millisecond)
			r.thaw()
			thawed := time.Now()
			took := (<-got).Sub(thawed)
			t.Logf("%s: the waiter got the lock %s after the thaw", k.name, took.Round(time.Millisecond))
			if took > time.Second+slack() {
				t.Fatalf("%s: the waiter got the lock %s after the thaw", k.name, took)
			}
		})
	}
}

// TestSellsAgainSoonAfterALongFreeze: the 5 s SIGSTOP of the data Redis, with the
// service's clients (ContextTimeoutEnabled: a call whose context ends has its connection closed
// and its answer lost). A waiter comes during the freeze and gives up before the thaw while its
// attempt is still queued in the stopped server; at SIGCONT that attempt runs, and, the lock
// being free, takes it for a waiter that has gone. The library gives such a lock back (it sends
// the kind's release-if-mine after an attempt whose answer never came), so another process takes
// the lock within a second of the thaw, in every kind (before, nobody renewed or released it:
// it stayed for its lease).
func TestSellsAgainSoonAfterALongFreeze(t *testing.T) {
	t.Parallel()
	if !locktest.Installed() {
		t.Skip("needs a real redis-server to stop with SIGSTOP (the in-process Redis cannot be frozen with a command queued in it)")
	}
	for _, k := range conformanceKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			sellsAgainAfterALongFreeze(t, k)
		})
	}
}

func sellsAgainAfterALongFreeze(t *testing.T, k conformanceKind) {
	n := 1
	if k.masters {
		n = 3
	}
	servers := locktest.NewN(t, n)
	for _, s := range servers {
		if s.Kind != locktest.KindReal {
			t.Skip("needs a real redis-server to stop with SIGSTOP")
		}
	}
	build := func() *lock.Locker {
		var cs []redis.UniversalClient
		for _, s := range servers {
			c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
				ReadTimeout: 2 * time.Second, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			cs = append(cs, c)
		}
		return buildOn(t, k, cs)
	}
	gone, buyer := build(), build()
	const key = "long-freeze"
	ctx := context.Background()
	// Both Lockers have talked to Redis (connections, subscriptions) before the freeze.
	for _, l := range []*lock.Locker{gone, buyer} {
		_ = acquire(t, l, key+"-warm", lock.Options{Wait: time.Second}).Release(ctx)
	}
	for _, s := range servers {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	frozen := time.Now()
	thaw := func() {
		for _, s := range servers {
			_ = s.Resume()
		}
	}
	defer thaw()
	// The waiter's attempt goes into the stopped server; its wait ends (and Acquire returns)
	// during the freeze, its connection closed with the attempt unanswered.
	_, err := gone.Acquire(ctx, key, lock.Options{Wait: time.Second, Lease: 20 * time.Second})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("the waiter during the freeze: %v, want ErrNotObtained", err)
	}
	if d := time.Since(frozen); d > 4*time.Second {
		t.Fatalf("the waiter gave up %s into the freeze, not before its end", d)
	}
	time.Sleep(time.Until(frozen.Add(5 * time.Second)))
	thaw()
	thawed := time.Now()
	le, err := buyer.Acquire(ctx, key, lock.Options{Wait: 4 * time.Second})
	took := time.Since(thawed)
	if err != nil {
		t.Fatalf("%s: no sale %s after the thaw of a 5 s freeze: %v (the attempt of the waiter that gave up during the freeze took the lock at SIGCONT, and nobody gave it back)", k.name, took.Round(time.Millisecond), err)
	}
	defer le.Release(ctx)
	t.Logf("%s: sold again %s after the thaw of a 5 s freeze", k.name, took.Round(time.Millisecond))
	if took > time.Second+slack() {
		t.Fatalf("%s: sold again %s after the thaw, want within 1 s", k.name, took)
	}
}
