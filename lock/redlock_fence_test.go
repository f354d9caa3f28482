package lock

import (
	"github.com/seckill-lab/seckill/lock/script"

	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

func TestRedlockFencedTokensIncreaseAndSitOnEveryMaster(t *testing.T) {
	servers := locktest.NewN(t, 3)
	clients := make([]*redis.Client, len(servers))
	for i, s := range servers {
		clients[i] = locktest.NewClient(t, s)
	}
	l, err := NewRedlock(universal(clients...), WithLease(2*time.Second), WithFencingTokens())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if rl := l.impl.(*redlockLocker); !rl.fence {
		t.Fatal("WithFencingTokens did not turn the tokens on")
	}
	ctx := context.Background()
	for want := int64(1); want <= 3; want++ {
		le := rlMustAcquire(t, l, Options{Wait: time.Second})
		if le.Token() != want {
			t.Fatalf("acquisition %d: token %d", want, le.Token())
		}
		for i, c := range clients {
			if got, err := c.Get(ctx, script.RedlockTokenKey(rlKey)).Int64(); err != nil || got != want {
				t.Fatalf("master %d: counter %d, %v; want %d", i+1, got, err, want)
			}
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// The release returns once a majority has deleted; wait for the last master too, or the
		// next acquisition may find the old key there and win (and count) on the other two only.
		for deadline := time.Now().Add(time.Second); slices.ContainsFunc(rlValues(t, clients), func(v string) bool { return v != "" }); {
			if time.Now().After(deadline) {
				t.Fatalf("lock keys still there a second after the release: %v", rlValues(t, clients))
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// Kleppmann's partition: A reaches masters 1 and 2, B masters 2 and 3. Master 1's counter is far
// ahead (it alone saw earlier acquisitions), so A's token is large; A's key on master 2 then
// expires early (a clock jump), and B wins masters 2 and 3. B's token must still be larger than
// A's: the raise round carried A's token to master 2. A plain INCR on each master (token = the
// largest reply) would give B 2 here, older than A's 51.
func TestRedlockFencedTokenOrdersHoldersAfterAnEarlyExpiry(t *testing.T) {
	servers := locktest.NewN(t, 3)
	clients := make([]*redis.Client, len(servers))
	for i, s := range servers {
		clients[i] = locktest.NewClient(t, s)
	}
	cut := deadClient(t)
	ctx := context.Background()
	if err := clients[0].Set(ctx, script.RedlockTokenKey(rlKey), 50, 0).Err(); err != nil {
		t.Fatal(err)
	}
	side := func(ms ...redis.UniversalClient) *Locker {
		l, err := NewRedlock(ms, WithLease(5*time.Second), WithFencingTokens())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	a := side(clients[0], clients[1], cut)
	b := side(cut, clients[1], clients[2])
	la := rlMustAcquire(t, a, Options{Wait: time.Second})
	if la.Token() != 51 {
		t.Fatalf("A's token %d, want 51 (master 1's counter + 1)", la.Token())
	}
	if _, err := b.Acquire(ctx, rlKey, Options{Wait: 100 * time.Millisecond}); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("B while A holds masters 1 and 2: %v, want ErrNotObtained", err)
	}
	if err := clients[1].PExpire(ctx, rlKey, time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	lb := rlMustAcquire(t, b, Options{Wait: time.Second})
	if lb.Token() <= la.Token() {
		t.Fatalf("B's token %d is not larger than A's %d: a stale write by A would be accepted", lb.Token(), la.Token())
	}
	_ = lb.Release(ctx)
	_ = la.Release(ctx)
}

// deadClient is a client of a loopback port nobody listens on: a master behind a partition.
func deadClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
