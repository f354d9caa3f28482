package lock_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// syncLocker builds mode reentrant on c with lock.waitReplicas = n.
func syncLocker(t *testing.T, c redis.UniversalClient, n int, timeout time.Duration) *lock.Locker {
	t.Helper()
	l, err := lock.NewReentrant(c, lock.WithLease(10*time.Second), lock.WithInstanceID("sync-test"),
		lock.WithReplicas(n, timeout), lock.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// replicated starts a master and one replica of it, linked.
func replicated(t *testing.T) (master, replica *locktest.Server) {
	t.Helper()
	if !locktest.UseReal() {
		t.Skip("needs a real redis-server for replication and WAIT (apt-get install redis-server)")
	}
	m, err := locktest.Start(locktest.Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	_, port, _ := net.SplitHostPort(m.Addr)
	r, err := locktest.Start(locktest.Options{Args: []string{"--replicaof", "127.0.0.1", port}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Resume(); r.Close() })
	rc, mc := locktest.NewClient(t, r), locktest.NewClient(t, m)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Both ends must agree: the replica's link is up and the master counts it online (until
		// then WAIT on the master can answer 0 even though the replica is fine).
		info, err := rc.Info(t.Context(), "replication").Result()
		minfo, merr := mc.Info(t.Context(), "replication").Result()
		if err == nil && merr == nil && strings.Contains(info, "master_link_status:up") &&
			strings.Contains(minfo, "state=online") {
			return m, r
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not linked: %v %s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWaitReplicasAcknowledged: with a replica that keeps up, every acquisition (first and
// nested) is on the replica when Acquire returns.
func TestWaitReplicasAcknowledged(t *testing.T) {
	t.Parallel()
	m, r := replicated(t)
	mc, rc := locktest.NewClient(t, m), locktest.NewClient(t, r)
	l := syncLocker(t, mc, 1, time.Second)
	const key = "{sku}:lock:reentrant"
	a := reentAcquire(t, l, "A", key, lock.Options{})
	nested := reentAcquire(t, l, "A", key, lock.Options{})
	// No polling: WAIT returned only once the replica had both writes.
	if h := reentHash(t, rc, key); len(h) != 1 || h["sync-test:A"] != "2" {
		t.Fatalf("replica's lock hash right after the acquisitions: %v, want hold count 2", h)
	}
	reentRelease(t, nested)
	reentRelease(t, a)
	if n := mc.Exists(t.Context(), key).Val(); n != 0 {
		t.Fatalf("lock still on the master after the releases")
	}
}

// TestWaitReplicasRefused: with the replica stopped, the acquisition is given back and fails
// with ErrNotReplicated (also ErrUnavailable); a nested one leaves the earlier hold as it was.
func TestWaitReplicasRefused(t *testing.T) {
	t.Parallel()
	m, r := replicated(t)
	mc := locktest.NewClient(t, m)
	l := syncLocker(t, mc, 1, 200*time.Millisecond)
	const key = "{sku}:lock:reentrant"
	// The first hold goes through a patient locker (same instance id, so the same hash field):
	// on a loaded machine the healthy replica may take longer than 200ms to acknowledge.
	first := reentAcquire(t, syncLocker(t, mc, 1, 5*time.Second), "A", key, lock.Options{})
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := l.Acquire(t.Context(), key, lock.Options{Owner: "A"})
	if !errors.Is(err, lock.ErrNotReplicated) || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("nested acquire with the replica stopped: %v; want ErrNotReplicated and ErrUnavailable", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 3*time.Second {
		t.Errorf("the refusal took %s; want about the 200ms WAIT timeout", took)
	}
	if h := reentHash(t, mc, key); h["sync-test:A"] != "1" {
		t.Fatalf("hold count after the refused nested acquire: %v, want 1", h)
	}
	// Another owner, first hold: nothing of it may stay on the master.
	other := syncLocker(t, mc, 1, 200*time.Millisecond)
	const key2 = "{sku2}:lock:reentrant"
	if _, err := other.Acquire(t.Context(), key2, lock.Options{Owner: "B"}); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("first acquire with the replica stopped: %v", err)
	}
	if n := mc.Exists(t.Context(), key2).Val(); n != 0 {
		t.Fatalf("the refused lock %s stayed on the master", key2)
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	reentRelease(t, first)
}

// TestWaitReplicasEverySingleServerKind: the other kinds on one server wait for replicas after
// their acquire (the lock's renewal on one connection, then WAIT): with a replica that keeps up,
// the lock is on it when Acquire returns; with the replica stopped, the acquisition fails with
// ErrNotReplicated and nothing of it stays on the master.
func TestWaitReplicasEverySingleServerKind(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(redis.UniversalClient, ...lock.Option) (*lock.Locker, error){
		"lua":    lock.NewLua,
		"fenced": lock.NewFenced,
		"fenced-rfenced": func(c redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error) {
			return lock.NewFenced(c, append(opts, lock.WithRFencedLockLayout())...)
		},
		"fair": lock.NewFair,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, r := replicated(t)
			mc, rc := locktest.NewClient(t, m), locktest.NewClient(t, r)
			locker := func(timeout time.Duration) *lock.Locker {
				l, err := build(mc, lock.WithLease(10*time.Second), lock.WithReplicas(1, timeout),
					lock.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				return l
			}
			const key = "{sku}:lock:synced"
			le, err := locker(5*time.Second).Acquire(t.Context(), key, lock.Options{Wait: time.Second})
			if err != nil {
				t.Fatalf("acquire with a replica that keeps up: %v", err)
			}
			if n := rc.Exists(t.Context(), key).Val(); n != 1 {
				t.Fatal("the lock is not on the replica when Acquire returns")
			}
			if err := le.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := r.Pause(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Resume() }()
			_, err = locker(200*time.Millisecond).Acquire(t.Context(), key, lock.Options{Wait: time.Second})
			if !errors.Is(err, lock.ErrNotReplicated) {
				t.Fatalf("acquire with the replica stopped: %v, want ErrNotReplicated", err)
			}
			if n := mc.Exists(t.Context(), key).Val(); n != 0 {
				t.Fatalf("the refused lock %s stayed on the master", key)
			}
		})
	}
}

// TestWaitReplicasOnlyOneServer: the option is for the data Redis of the kinds on one server;
// multilock's independent masters have no replicas, so NewMultilock refuses it rather than ignore
// it.
func TestWaitReplicasOnlyOneServer(t *testing.T) {
	t.Parallel()
	var masters []redis.UniversalClient
	for _, s := range locktest.NewN(t, 3) {
		masters = append(masters, locktest.NewClient(t, s))
	}
	opts := []lock.Option{lock.WithLease(5 * time.Second), lock.WithReplicas(1, 100*time.Millisecond)}
	if ml, err := lock.NewMultilock(masters, opts...); err == nil {
		_ = ml.Close()
		t.Fatal("NewMultilock accepted WithReplicas, which it cannot honour")
	}
	re, err := lock.NewReentrant(masters[0], opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	// The data Redis here has no replica: reentrant refuses, as configured.
	if _, err := re.Acquire(t.Context(), "{x}:lock:reentrant", lock.Options{Wait: setupWait}); !errors.Is(err, lock.ErrNotReplicated) {
		t.Fatalf("reentrant without a replica: %v, want ErrNotReplicated", err)
	}
}
