package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestShardedBuildsStandInForTheirScripts: on sharded pub/sub, each script that announces a
// release or permits given back is sent in its sharded build, the very script with SPUBLISH in
// place of PUBLISH (else a release would announce where no waiter listens); every other script,
// and every script on classic pub/sub, is sent as it is.
func TestShardedBuildsStandInForTheirScripts(t *testing.T) {
	t.Parallel()
	onShards, onClassic := &pubsubMode{force: subSharded}, &pubsubMode{force: subClassic}
	builds := script.ShardedSources()
	twins := 0
	for name, src := range script.Sources() {
		want := src
		if b, ok := builds[name]; ok {
			want = b
			twins++
			if !strings.Contains(b, "redis.call('spublish', ") || strings.Contains(strings.ToLower(b), "'publish'") {
				t.Errorf("the sharded build of %s still publishes classically, or not at all:\n%s", name, b)
			}
		}
		if got := onShards.script(t.Context(), name).Hash(); got != redis.NewScript(want).Hash() {
			t.Errorf("%s on sharded pub/sub is not its sharded build", name)
		}
		if got := onClassic.script(t.Context(), name).Hash(); got != redis.NewScript(src).Hash() {
			t.Errorf("%s on classic pub/sub is not its classic build", name)
		}
	}
	if twins != 14 {
		t.Fatalf("%d scripts with a sharded build, want the reentrant release (Redisson's and with the nomination), the nomination's pass, the fair release, cancel and heartbeat, the read and write releases, and the semaphores' six", twins)
	}
}

// TestFairThreadWaitChainsDeadlines: with WithThreadWait the fair queue's deadlines are chained
// by the thread wait, not by each acquisition's wait, and the queue keys expire with the last
// deadline.
func TestFairThreadWaitChainsDeadlines(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	rdb := locktest.NewClient(t, srv)
	const threadWait = 2 * time.Second
	l, err := NewFair(rdb, WithThreadWait(threadWait), WithLease(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	key := "fair-thread-wait"
	holder, err := l.Acquire(ctx, key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)
	waiter, err := NewFair(rdb, WithThreadWait(threadWait), WithInstanceID("w"))
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(wctx, key, Options{Wait: time.Minute, Owner: "o"})
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	var due float64
	for {
		due, err = rdb.ZScore(ctx, fairDeadlines(key), "w:o").Result()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter never queued: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ahead := time.Until(time.UnixMilli(int64(due)))
	// Holder's PTTL (at most the 3 s lease) + the 2 s thread wait, not + the 1 min wait.
	if ahead > 3*time.Second+threadWait || ahead < threadWait {
		t.Errorf("the waiter's deadline is %v ahead, want the holder's TTL + %v", ahead, threadWait)
	}
	for _, k := range []string{fairQueue(key), fairDeadlines(key)} {
		ttl := rdb.PTTL(ctx, k).Val()
		if ttl <= 0 || ttl > ahead+time.Second {
			t.Errorf("%s PTTL %v, want about the last deadline, %v", k, ttl, ahead)
		}
	}
	cancel()
	<-done
}

// TestShardedPubSubOnOneServer: forced sharded pub/sub on one Redis 7 server: the reentrant
// unlock reaches an SSUBSCRIBE subscriber, and a waiter is woken by the release at once rather
// than by the holder's TTL. Needs a real redis-server: the in-process one has no sharded pub/sub.
func TestShardedPubSubOnOneServer(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	if srv.Kind != locktest.KindReal {
		t.Skip("the in-process Redis has no SSUBSCRIBE/SPUBLISH")
	}
	rdb := locktest.NewClient(t, srv)
	ctx := context.Background()
	if err := rdb.Do(ctx, "pubsub", "shardnumsub").Err(); err != nil {
		t.Skipf("this redis-server has no sharded pub/sub: %v", err)
	}
	key := "sharded-one-server"
	ps := rdb.SSubscribe(ctx, unlockChannel(key))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := NewReentrant(rdb, WithShardedPubSub(true))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewReentrant(rdb, WithShardedPubSub(true))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	held, err := a.Acquire(ctx, key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		le, err := b.Acquire(ctx, key, Options{Wait: 20 * time.Second})
		if err != nil {
			t.Error(err)
			got <- time.Time{}
			return
		}
		got <- time.Now()
		_ = le.Release(ctx)
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, err := rdb.PubSubShardNumSub(ctx, unlockChannel(key)).Result()
		if err == nil && n[unlockChannel(key)] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never subscribed with SSUBSCRIBE")
		}
	}
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := ps.ReceiveMessage(rctx)
	if err != nil || m.Payload != unlockMessage {
		t.Fatalf("sharded subscriber: %v, %v", m, err)
	}
	at := <-got
	// The holder's lock lived 30 s: anything near that is the TTL, not the wake-up.
	if woke := at.Sub(released); at.IsZero() || woke > 5*time.Second {
		t.Fatalf("the waiter took the lock %v after the release", woke)
	} else {
		t.Logf("the waiter took the lock %v after the release", woke)
	}
}

// TestHashTag: the part of a key Redis Cluster hashes, which decides whether the default
// layout's counter shares a slot with RFencedLock's (rfencedKeys).
func TestHashTag(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"{sku}:lock:fenced": "sku", "a{b}c{d}": "b", "plain": "", "{}x": "", "a{b": "", "a}{b}": "b",
	} {
		if got := hashTag(key); got != want {
			t.Errorf("hashTag(%q) = %q, want %q", key, got, want)
		}
	}
}
