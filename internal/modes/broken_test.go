package modes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/internal/testredis"
	"seckill/lab/fault"

	"github.com/seckill-lab/seckill/lock"
)

// brokenSetup starts a Redis server and builds mode name on it with the given default lease.
func brokenSetup(t *testing.T, name string, lease time.Duration) (modes.Locker, *redis.Client) {
	t.Helper()
	c := testredis.Client(t, testredis.Start(t))
	m, err := modes.LookupMode(name)
	if err != nil {
		t.Fatal(err)
	}
	// The lab's faults, wired as the service wires them: the hook on the client, the knobs.
	fault.Install(c)
	steps := modes.StepHooks{BeforeExpire: fault.BeforeExpire, BeforeDel: fault.BeforeDel}
	l, err := m.New(modes.Deps{Data: c, InstanceID: "test", Options: []lock.Option{lock.WithLease(lease)}, Steps: steps})
	if err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	return l, c
}

// pttl is the raw PTTL reply: -1 means the key has no TTL, -2 that it does not exist.
func pttl(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(t.Context(), "pttl", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

func exists(t *testing.T, c *redis.Client, key string) bool {
	t.Helper()
	n, err := c.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// assertDeadlock checks that key has no TTL, stays past lease, and blocks a later acquire.
func assertDeadlock(t *testing.T, l modes.Locker, c *redis.Client, key string, lease time.Duration) {
	t.Helper()
	if got := pttl(t, c, key); got != -1 {
		t.Fatalf("PTTL %s = %d after the crash, want -1 (key with no TTL)", key, got)
	}
	time.Sleep(lease + lease/2) // past any lease the holder could have meant to set
	wait := 300 * time.Millisecond
	start := time.Now()
	b, err := l.Acquire(t.Context(), key, lock.Options{Wait: wait, Lease: lease})
	if !errors.Is(err, lock.ErrNotObtained) {
		if b != nil {
			_ = b.Release(t.Context())
		}
		t.Fatalf("acquire after the crash: err = %v, want ErrNotObtained (deadlock)", err)
	}
	if el := time.Since(start); el < wait {
		t.Fatalf("acquire gave up after %s, before its wait of %s", el, wait)
	}
	if got := pttl(t, c, key); got != -1 {
		t.Fatalf("PTTL %s = %d after waiting, want -1 still", key, got)
	}
}

func TestSetnxCrashAfterLockDeadlocks(t *testing.T) {
	const lease = 300 * time.Millisecond
	l, c := brokenSetup(t, "setnx", lease)
	ctx := t.Context()

	// Control: without the crash the lock is released and can be taken again.
	ctl := "{t}:lock:setnx:control"
	a, err := l.Acquire(ctx, ctl, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if exists(t, c, ctl) {
		t.Fatalf("%s still exists after release", ctl)
	}

	key := "{t}:lock:setnx"
	// crash=after-lock: the holder dies holding the lock, so its DEL never comes.
	if _, err = l.Acquire(ctx, key, lock.Options{Lease: lease}); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	assertDeadlock(t, l, c, key, lease)
}

func TestSetnxExpireCrashBeforeExpireDeadlocks(t *testing.T) {
	const lease = 300 * time.Millisecond
	l, c := brokenSetup(t, "setnx-expire", lease)
	ctx := t.Context()

	// Control: without the fault the EXPIRE is sent and the key gets the lease.
	ctl := "{t}:lock:setnx-expire:control"
	a, err := l.Acquire(ctx, ctl, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if got := pttl(t, c, ctl); got <= 0 || got > lease.Milliseconds() {
		t.Fatalf("PTTL %s = %d, want 1..%d", ctl, got, lease.Milliseconds())
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}

	key := "{t}:lock:setnx-expire"
	crashCtx, _ := fault.Attach(ctx, fault.Plan{CrashBeforeExpire: true})
	a, err = l.Acquire(crashCtx, key, lock.Options{Lease: lease})
	if !errors.Is(err, fault.ErrCrashed) || a != nil {
		t.Fatalf("acquire with crash=before-expire: lease %v, err %v; want no lease and ErrCrashed", a, err)
	}
	assertDeadlock(t, l, c, key, lease)
}

func TestSetnxExBlindDelRemovesNextHoldersLock(t *testing.T) {
	const lease = 200 * time.Millisecond
	l, c := brokenSetup(t, "setnx-ex", lease)
	ctx := t.Context()
	key := "{t}:lock:setnx-ex"

	a, err := l.Acquire(ctx, key, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	// SET NX PX: the sub-second lease is honoured.
	if got := pttl(t, c, key); got <= 0 || got > lease.Milliseconds() {
		t.Fatalf("PTTL = %d, want 1..%d", got, lease.Milliseconds())
	}
	// A's business time outlasts the lease: B, polling, gets the lock once A's key expires.
	start := time.Now()
	b, err := l.Acquire(ctx, key, lock.Options{Wait: 2 * time.Second, Lease: lease})
	if err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	t.Logf("B waited %s for A's key to expire", time.Since(start).Round(time.Millisecond))
	if !exists(t, c, key) {
		t.Fatal("B's key is missing right after B acquired")
	}
	// A finishes and DELs blindly: B's lock is gone.
	if err := a.Release(ctx); !errors.Is(err, modes.ErrForeignUnlock) {
		t.Fatalf("A release: %v, want ErrForeignUnlock", err)
	}
	if exists(t, c, key) {
		t.Fatal("B's lock key still exists: A's DEL did not remove it")
	}
	// B no longer holds anything; a third buyer walks right in while B is still "inside".
	cLease, err := l.Acquire(ctx, key, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("C acquire while B still works: %v, want success (the bug)", err)
	}
	if err := b.Release(ctx); !errors.Is(err, modes.ErrForeignUnlock) {
		t.Fatalf("B release: %v, want ErrForeignUnlock (B deletes C's lock in turn)", err)
	}
	if err := cLease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("C release: %v, want ErrNotHeld (its key was deleted by B)", err)
	}
}

func TestUUIDPauseBeforeDelRemovesNextHoldersLock(t *testing.T) {
	const lease = 300 * time.Millisecond
	l, c := brokenSetup(t, "uuid", lease)
	ctx := t.Context()
	key := "{t}:lock:uuid"

	a, err := l.Acquire(ctx, key, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	// A releases while its lock is still its own, but pauses between the compare and the DEL
	// for longer than the lock has left to live: the DEL lands half a lease after B acquired,
	// while B's key is alive.
	released := make(chan error, 1)
	releaseStart := time.Now()
	go func() {
		rctx, _ := fault.Attach(context.WithoutCancel(ctx), fault.Plan{PauseBeforeDel: lease + lease/2})
		released <- a.Release(rctx)
	}()
	b, err := l.Acquire(ctx, key, lock.Options{Wait: 2 * time.Second, Lease: lease})
	if err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	bAt := time.Since(releaseStart)
	select {
	case err := <-released:
		t.Fatalf("A's release finished (%v) before B acquired at %s: the pause did not hold", err, bAt)
	default:
	}
	if err := <-released; !errors.Is(err, modes.ErrForeignUnlock) {
		t.Fatalf("A release: %v, want ErrForeignUnlock", err)
	}
	if exists(t, c, key) {
		t.Fatal("B's lock key still exists: A's DEL did not remove it")
	}
	if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("B release: %v, want ErrNotHeld (A deleted B's lock)", err)
	}
}

func TestUUIDCheckSparesNextHolderWithoutPause(t *testing.T) {
	const lease = 200 * time.Millisecond
	l, c := brokenSetup(t, "uuid", lease)
	ctx := t.Context()
	key := "{t}:lock:uuid"

	a, err := l.Acquire(ctx, key, lock.Options{Lease: lease})
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	b, err := l.Acquire(ctx, key, lock.Options{Wait: 2 * time.Second, Lease: lease})
	if err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	// The key is already B's when A checks: the UUID compare fixes step 4 of docs/lab.md.
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A release: %v, want ErrNotHeld", err)
	}
	if !exists(t, c, key) {
		t.Fatal("A's release deleted B's lock although the values differed")
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B release: %v", err)
	}
	if exists(t, c, key) {
		t.Fatal("key still exists after B's release")
	}
}

func TestBrokenModesFaults(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		supports []string
		refuses  []string
	}{
		{"setnx", []string{modes.FaultWork, modes.FaultCrashAfterLock, modes.FaultHolderPause},
			[]string{modes.FaultCrashBeforeExpire, modes.FaultPauseBeforeDel}},
		{"setnx-expire", []string{modes.FaultCrashBeforeExpire, modes.FaultCrashAfterLock}, []string{modes.FaultPauseBeforeDel}},
		{"setnx-ex", []string{modes.FaultWork, modes.FaultHolderPause}, []string{modes.FaultCrashBeforeExpire, modes.FaultPauseBeforeDel}},
		{"uuid", []string{modes.FaultPauseBeforeDel, modes.FaultWork}, []string{modes.FaultCrashBeforeExpire}},
		{"fenced", []string{modes.FaultWork, modes.FaultCrashAfterLock, modes.FaultHolderPause},
			[]string{modes.FaultCrashBeforeExpire, modes.FaultPauseBeforeDel}},
	} {
		m, err := modes.LookupMode(tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tc.supports {
			if !m.Supports(f) {
				t.Errorf("%s does not support %s", tc.mode, f)
			}
		}
		for _, f := range tc.refuses {
			if m.Supports(f) {
				t.Errorf("%s claims to support %s", tc.mode, f)
			}
		}
		if m.Safe != (tc.mode == "fenced") {
			t.Errorf("%s: Safe = %v", tc.mode, m.Safe)
		}
	}
}
