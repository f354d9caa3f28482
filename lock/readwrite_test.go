package lock_test

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// rwLockers builds NewReadWrite's two sides on c as instance id, closed when the test ends.
func rwLockers(t *testing.T, c *redis.Client, id string, opts ...lock.Option) (read, write *lock.Locker) {
	t.Helper()
	opts = append([]lock.Option{lock.WithInstanceID(id), lock.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	read, write, err := lock.NewReadWrite(c, opts...)
	if err != nil {
		t.Fatalf("NewReadWrite: %v", err)
	}
	t.Cleanup(func() {
		if err := errors.Join(read.Close(), write.Close()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return read, write
}

func rwAcquire(t *testing.T, l *lock.Locker, key, owner string, wait time.Duration) *lock.Lease {
	t.Helper()
	le, err := l.Acquire(t.Context(), key, lock.Options{Owner: owner, Wait: wait})
	if err != nil {
		t.Fatalf("acquire %s as %q: %v", key, owner, err)
	}
	return le
}

func rwRelease(t *testing.T, le *lock.Lease) {
	t.Helper()
	if err := le.Release(t.Context()); err != nil {
		t.Fatalf("release %s (%s): %v", le.Key(), le.Field(), err)
	}
}

// refused checks that l cannot take key for owner in one attempt.
func refused(t *testing.T, l *lock.Locker, key, owner string) {
	t.Helper()
	le, err := l.Acquire(t.Context(), key, lock.Options{Owner: owner})
	if err == nil {
		_ = le.Release(t.Context())
		t.Fatalf("%s taken as %q (%s), want refused", key, owner, le.Field())
	}
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire %s as %q: %v, want ErrNotObtained", key, owner, err)
	}
}

// rwHash is the lock's hash as Redis holds it.
func rwHash(t *testing.T, c *redis.Client, key string) map[string]string {
	t.Helper()
	h, err := c.HGetAll(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return h
}

// TestReadWriteReadersShare: eight readers, each its own owner, hold the read side at once.
func TestReadWriteReadersShare(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, _ := rwLockers(t, c, "go")
	const n, key = 8, "rw:share"
	var all sync.WaitGroup
	all.Add(n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			le, err := read.Acquire(t.Context(), key, lock.Options{Owner: fmt.Sprint("r", i), Wait: 5 * time.Second})
			all.Done()
			if err != nil {
				errs <- err
				return
			}
			all.Wait() // every reader holds it now
			errs <- le.Release(t.Context())
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := c.Exists(t.Context(), key).Result(); n != 0 {
		t.Errorf("the lock is still there after the last reader's release")
	}
}

// TestReadWriteWriterExcludes: readers and writers of two processes take turns on one key; no
// writer ever holds it together with anyone (overlaps counted: 0), and readers did share.
func TestReadWriteWriterExcludes(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	r1, w1 := rwLockers(t, c, "p1")
	r2, w2 := rwLockers(t, c, "p2")
	const key = "rw:exclude"
	var readers, writers, overlaps, shared, writes atomic.Int64
	work := func(l *lock.Locker, write bool) error {
		le, err := l.Acquire(t.Context(), key, lock.Options{Wait: 10 * time.Second})
		if err != nil {
			return err
		}
		if write {
			if writers.Add(1) > 1 || readers.Load() > 0 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond)
			writes.Add(1)
			writers.Add(-1)
		} else {
			if readers.Add(1) > 1 {
				shared.Add(1)
			}
			if writers.Load() > 0 {
				overlaps.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
			readers.Add(-1)
		}
		return le.Release(t.Context())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i, l := range []*lock.Locker{r1, r2, r1, r2, w1, w2} {
		wg.Go(func() {
			for range 6 {
				if err := work(l, i >= 4); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if overlaps.Load() != 0 || writes.Load() != 12 {
		t.Errorf("%d overlaps with a writer (want 0), %d writes (want 12)", overlaps.Load(), writes.Load())
	}
	t.Logf("%d reads found another reader holding it", shared.Load())
}

// TestReadWriteReentry: an owner re-enters each side and needs as many releases; each read hold
// has its own timeout key.
func TestReadWriteReentry(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	const key = "rw:reentry"
	a := rwAcquire(t, read, key, "t1", 0)
	b := rwAcquire(t, read, key, "t1", 0)
	if h := rwHash(t, c, key); h["go:t1"] != "2" || h["mode"] != "read" {
		t.Fatalf("two read holds: hash %v, want mode read and go:t1 2", h)
	}
	if n, _ := c.Exists(t.Context(), "{rw:reentry}:go:t1:rwlock_timeout:1", "{rw:reentry}:go:t1:rwlock_timeout:2").Result(); n != 2 {
		t.Fatalf("%d of the two read holds' timeout keys exist", n)
	}
	rwRelease(t, b)
	if h := rwHash(t, c, key); h["go:t1"] != "1" {
		t.Fatalf("one read hold left: hash %v", h)
	}
	rwRelease(t, a)
	w1 := rwAcquire(t, write, key, "t1", 0)
	w2 := rwAcquire(t, write, key, "t1", 0)
	refused(t, write, key, "t2")
	if h := rwHash(t, c, key); h["go:t1:write"] != "2" || h["mode"] != "write" {
		t.Fatalf("two write holds: hash %v", h)
	}
	rwRelease(t, w2)
	refused(t, read, key, "t2")
	rwRelease(t, w1)
	rwRelease(t, rwAcquire(t, read, key, "t2", 0))
	if err := w1.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
}

// TestReadWriteDowngrade: the writer takes the read side while it writes; other readers wait
// for the write release, which leaves the lock in read mode and lets them in at once.
func TestReadWriteDowngrade(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	const key = "rw:downgrade"
	w := rwAcquire(t, write, key, "t1", 0)
	r := rwAcquire(t, read, key, "t1", time.Second)
	refused(t, read, key, "t2")
	got := make(chan error, 1)
	go func() {
		le, err := read.Acquire(t.Context(), key, lock.Options{Owner: "t2", Wait: 10 * time.Second})
		if err == nil {
			err = le.Release(t.Context())
		}
		got <- err
	}()
	waitSubscribed(t, c, "redisson_rwlock:{rw:downgrade}")
	rwRelease(t, w)
	// Reader t2 may be in already.
	if h := rwHash(t, c, key); h["mode"] != "read" || h["go:t1"] != "1" || h["go:t1:write"] != "" {
		t.Fatalf("after the write release: hash %v, want mode read, go:t1 1 and no writer", h)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("reader t2: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader t2 was not let in by the write release (downgraded lock in read mode)")
	}
	rwRelease(t, r)
}

// TestReadWriteUpgradeRefused: a reader asking for the write side is ErrUpgrade at once, whatever
// its wait, and Redis is left as it was.
func TestReadWriteUpgradeRefused(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	const key = "rw:upgrade"
	r := rwAcquire(t, read, key, "t1", 0)
	before := rwHash(t, c, key)
	keys := func() []string {
		k, err := c.Keys(t.Context(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keysBefore := keys()
	start := time.Now()
	_, err := write.Acquire(t.Context(), key, lock.Options{Owner: "t1", Wait: 10 * time.Second})
	if !errors.Is(err, lock.ErrUpgrade) || !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("upgrade: %v, want ErrUpgrade and ErrNotObtained", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the upgrade took %s to refuse, want at once", d)
	}
	if after := rwHash(t, c, key); !maps.Equal(before, after) || len(keys()) != len(keysBefore) {
		t.Errorf("the refused upgrade changed Redis: hash %v -> %v, keys %v -> %v", before, after, keysBefore, keys())
	}
	// From a Locker that does not know the owner holds the read side (another process, same id).
	_, write2 := rwLockers(t, c, "go")
	if _, err := write2.Acquire(t.Context(), key, lock.Options{Owner: "t1", Wait: 10 * time.Second}); !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("upgrade from a second Locker: %v, want ErrUpgrade", err)
	}
	rwRelease(t, r)
	rwRelease(t, rwAcquire(t, write, key, "t1", 0))
}

// waitSubscribed waits until someone listens on channel: a waiter's queue subscribes after its
// first failed attempt.
func waitSubscribed(t *testing.T, c *redis.Client, channel string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n, err := c.PubSubNumSub(t.Context(), channel).Result(); err == nil && n[channel] > 0 {
			return
		}
	}
	t.Fatalf("nobody subscribed to %s within 5 s", channel)
}

// TestReadWriteReleaseWakesWriter: a writer waiting (in another process) for two readers is woken
// by the last read release, not by the 30 s lease running out.
func TestReadWriteReleaseWakesWriter(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, _ := rwLockers(t, c, "p1")
	_, write := rwLockers(t, c, "p2")
	const key = "rw:wake"
	a, b := rwAcquire(t, read, key, "t1", 0), rwAcquire(t, read, key, "t2", 0)
	got := make(chan error, 1)
	go func() {
		le, err := write.Acquire(t.Context(), key, lock.Options{Wait: 20 * time.Second})
		if err == nil {
			err = le.Release(t.Context())
		}
		got <- err
	}()
	waitSubscribed(t, c, "redisson_rwlock:{rw:wake}")
	rwRelease(t, a)
	select {
	case err := <-got:
		t.Fatalf("the writer finished while a reader still holds the lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	rwRelease(t, b)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the last read release did not wake the writer")
	}
}

// TestReadWriteWatchdog: the watchdog keeps a read hold, its hash and its timeout key past its
// lease (two renewals, every lease/3); Lost closes once the lock is gone from Redis.
func TestReadWriteWatchdog(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	// A lease of 1 s: a busy machine may be late by a few hundred ms without losing it.
	read, write := rwLockers(t, c, "go", lock.WithLease(time.Second))
	const key = "rw:watchdog"
	le := rwAcquire(t, read, key, "t1", 0)
	waitRenewals(t, le, 2)
	if ttl, _ := c.PTTL(t.Context(), "{rw:watchdog}:go:t1:rwlock_timeout:1").Result(); ttl <= 0 {
		t.Errorf("the read hold's timeout key has PTTL %s past its lease", ttl)
	}
	refused(t, write, key, "w")
	if err := c.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-le.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close after the lock was deleted")
	}
}

// TestReadWriteWireLayout: what a Go client writes is what Redisson's RedissonReadLock and
// RedissonWriteLock write and read: the hash's fields, each read hold's timeout key (on a plain
// name and one with a hash tag), and the messages on redisson_rwlock:{name}: "0" when the last
// read goes, "1" when a write goes.
func TestReadWriteWireLayout(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	for _, tc := range []struct{ key, prefix, channel string }{
		{"rw:wire", "{rw:wire}", "redisson_rwlock:{rw:wire}"},
		{"{sku}:rw", "{sku}:rw", "redisson_rwlock:{sku}:rw"},
	} {
		ps := c.Subscribe(t.Context(), tc.channel)
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Fatal(err)
		}
		msgs := ps.Channel()
		next := func() string {
			select {
			case m := <-msgs:
				return m.Payload
			case <-time.After(5 * time.Second):
				return "(nothing within 5 s)"
			}
		}
		a, b := rwAcquire(t, read, tc.key, "t1", 0), rwAcquire(t, read, tc.key, "t1", 0)
		want := map[string]string{"mode": "read", "go:t1": "2"}
		if h := rwHash(t, c, tc.key); !maps.Equal(h, want) {
			t.Errorf("%s: two read holds: hash %v, want %v", tc.key, h, want)
		}
		for _, n := range []string{"1", "2"} {
			k := tc.prefix + ":go:t1:rwlock_timeout:" + n
			if ttl, _ := c.PTTL(t.Context(), k).Result(); ttl <= 0 || ttl > 30*time.Second {
				t.Errorf("%s: PTTL %s, want the 30 s lease", k, ttl)
			}
		}
		rwRelease(t, b)
		rwRelease(t, a)
		if m := next(); m != "0" {
			t.Errorf("%s: the last read release published %q, want \"0\"", tc.channel, m)
		}
		w := rwAcquire(t, write, tc.key, "t2", 0)
		want = map[string]string{"mode": "write", "go:t2:write": "1"}
		if h := rwHash(t, c, tc.key); !maps.Equal(h, want) {
			t.Errorf("%s: a write hold: hash %v, want %v", tc.key, h, want)
		}
		rwRelease(t, w)
		if m := next(); m != "1" {
			t.Errorf("%s: the write release published %q, want \"1\"", tc.channel, m)
		}
		if n, _ := c.Exists(t.Context(), tc.key, tc.prefix+":go:t1:rwlock_timeout:1").Result(); n != 0 {
			t.Errorf("%s: %d keys left after the releases", tc.key, n)
		}
		_ = ps.Close()
	}
}

// TestReadWriteInteropJavaWriter: a write lock held as a Java client writes it keeps Go's readers
// and writers out; Redisson's release (the hash deleted, "1" published) lets a waiting Go reader
// in at once.
func TestReadWriteInteropJavaWriter(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	const key = "rw:java-writer"
	ctx := t.Context()
	if err := c.HSet(ctx, key, "mode", "write", "java:1:write", 1).Err(); err != nil {
		t.Fatal(err)
	}
	c.PExpire(ctx, key, 30*time.Second)
	refused(t, read, key, "t1")
	refused(t, write, key, "t1")
	got := make(chan error, 1)
	go func() {
		le, err := read.Acquire(ctx, key, lock.Options{Owner: "t1", Wait: 20 * time.Second})
		if err == nil {
			err = le.Release(ctx)
		}
		got <- err
	}()
	waitSubscribed(t, c, "redisson_rwlock:{rw:java-writer}")
	c.Del(ctx, key)
	c.Publish(ctx, "redisson_rwlock:{rw:java-writer}", "1")
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Go reader: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Java writer's release did not wake the Go reader")
	}
}

// TestReadWriteInteropJavaReader: a Java reader's hold lets a Go reader share and keeps a Go
// writer out. Go's read release leaves the lock to the Java reader for as long as its timeout key
// lives; once that is gone (a Java client that died), Go's release deletes the lock.
func TestReadWriteInteropJavaReader(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	const key, javaTimeout = "rw:java-reader", "{rw:java-reader}:java:1:rwlock_timeout:1"
	ctx := t.Context()
	if err := c.HSet(ctx, key, "mode", "read", "java:1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, javaTimeout, 1, 20*time.Second)
	c.PExpire(ctx, key, 20*time.Second)
	r := rwAcquire(t, read, key, "t1", 0)
	refused(t, write, key, "t2")
	rwRelease(t, r)
	if h := rwHash(t, c, key); h["java:1"] != "1" || h["mode"] != "read" || h["go:t1"] != "" {
		t.Fatalf("after Go's read release: hash %v, want the Java reader's alone", h)
	}
	if ttl, _ := c.PTTL(ctx, key).Result(); ttl <= 0 || ttl > 20*time.Second {
		t.Errorf("the hash's PTTL %s, want the Java reader's timeout key's (<= 20 s)", ttl)
	}
	c.Del(ctx, javaTimeout) // the Java reader's hold has run out
	rwRelease(t, rwAcquire(t, read, key, "t1", 0))
	if n, _ := c.Exists(ctx, key).Result(); n != 0 {
		t.Errorf("the lock stays with a dead Java reader in it: %v", rwHash(t, c, key))
	}
	rwRelease(t, rwAcquire(t, write, key, "t2", 0))
}

// TestReadWriteReadersFollowWriter: readers of one process waiting for a writer all get in on
// its release, together.
func TestReadWriteReadersFollowWriter(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, _ := rwLockers(t, c, "p1")
	_, write := rwLockers(t, c, "p2")
	const n, key = 4, "rw:follow"
	w := rwAcquire(t, write, key, "w", 0)
	var all sync.WaitGroup
	all.Add(n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			le, err := read.Acquire(t.Context(), key, lock.Options{Owner: fmt.Sprint("r", i), Wait: 20 * time.Second})
			all.Done()
			if err == nil {
				all.Wait() // every reader holds it now
				err = le.Release(t.Context())
			}
			errs <- err
		}()
	}
	waitSubscribed(t, c, "redisson_rwlock:{rw:follow}")
	rwRelease(t, w)
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not every waiting reader got in together after the write release")
		}
	}
}

// TestReadWriteReadLease: a read lease keeps the promises of every lease with the write side as
// the rival: Refresh while held, ErrNotHeld after the release and on a second one, an explicit
// lease that runs out frees the lock, and Close gives back what its side holds.
func TestReadWriteReadLease(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, write := rwLockers(t, c, "go")
	const key = "rw:lease"
	ctx := t.Context()
	le := rwAcquire(t, read, key, "t1", 0)
	if err := le.Refresh(ctx); err != nil {
		t.Fatalf("refresh while held: %v", err)
	}
	rwRelease(t, le)
	if err := le.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
	if err := le.Refresh(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("refresh after the release: %v, want ErrNotHeld", err)
	}

	short, err := read.Acquire(ctx, key, lock.Options{Owner: "t1", Lease: 200 * time.Millisecond, ExplicitLease: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := write.Acquire(ctx, key, lock.Options{Owner: "w", Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("the writer after an explicit read lease of 200 ms: %v", err)
	}
	select {
	case <-short.Lost():
	default:
		t.Error("the read lease's Lost is open after a writer took the lock")
	}
	rwRelease(t, w)

	rwAcquire(t, read, key, "t1", 0)
	read2, _ := rwLockers(t, c, "go2")
	rwAcquire(t, read2, key, "t2", 0)
	if err := errors.Join(read.Close(), read2.Close()); err != nil {
		t.Fatal(err)
	}
	rwRelease(t, rwAcquire(t, write, key, "w", 0))
}

// TestReadWriteNestedHoldsShareAWatchdog: an owner's two read holds are renewed by one watchdog (as
// Redisson's one entry per lock and thread): the first hold's release leaves it renewing the
// second, whose Lost stays open past the lease.
func TestReadWriteNestedHoldsShareAWatchdog(t *testing.T) {
	t.Parallel()
	c := locktest.NewClient(t, locktest.New(t))
	read, _ := rwLockers(t, c, "go", lock.WithLease(time.Second))
	const key = "rw:nested"
	first := rwAcquire(t, read, key, "t1", 0)
	second := rwAcquire(t, read, key, "t1", 0)
	rwRelease(t, first)
	waitRenewals(t, second, second.Renewals()+2)
	if n, err := c.HGet(t.Context(), key, "go:t1").Int(); err != nil || n != 1 {
		t.Errorf("the owner's read field counts %d holds (%v), want 1", n, err)
	}
	rwRelease(t, second)
}

// waitRenewals waits, 5 s at most, until le's watchdog has made n renewals (with a 1 s lease), and
// fails the test if le's Lost closes first.
func waitRenewals(t *testing.T, le *lock.Lease, n int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); le.Renewals() < n; time.Sleep(10 * time.Millisecond) {
		select {
		case <-le.Lost():
			t.Fatalf("Lost closed while the watchdog renews (%d renewals)", le.Renewals())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d renewals in 5 s with a 1 s lease, want %d", le.Renewals(), n)
		}
	}
}
