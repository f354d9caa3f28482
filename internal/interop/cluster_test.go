package interop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"

	"seckill/app"
	"seckill/config"
	"seckill/internal/modes"
	"seckill/internal/redisproc"
)

// startCluster gives a 3-master Redis Cluster for t, or skips when redis-server/redis-cli are
// not installed (a cluster cannot be emulated in process).
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := redisproc.StartCluster(ctx, 3)
	if errors.Is(err, redisproc.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cc := c.Client()
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// channelOf is the reentrant lock's unlock channel for key, as Redisson names it.
func channelOf(key string) string { return "redisson_lock__channel:{" + key + "}" }

// received waits up to d for a message on ps; "" when none came.
func received(ps *redis.PubSub, d time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			return ""
		}
		if msg, ok := m.(*redis.Message); ok {
			return msg.Channel + " " + msg.Payload
		}
	}
}

// subscribed returns a pub/sub whose subscription Redis has confirmed.
func subscribed(t *testing.T, ps *redis.PubSub) *redis.PubSub {
	t.Helper()
	t.Cleanup(func() { _ = ps.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return ps
}

// TestClusterUnlockIsSharded: on a Redis 7 cluster a reentrant lock's release reaches a sharded
// subscriber of its channel (as Redisson listens there), and not a classic one; forced classic
// (WithShardedPubSub(false)), the other way round.
func TestClusterUnlockIsSharded(t *testing.T) {
	t.Parallel()
	cc := startCluster(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		opts    []lock.Option
		sharded bool
	}{
		{"auto", nil, true},
		{"forced-classic", []lock.Option{lock.WithShardedPubSub(false)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "interop-sharded-" + tc.name
			l, err := lock.NewReentrant(cc, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			sharded := subscribed(t, cc.SSubscribe(ctx, channelOf(key)))
			classic := subscribed(t, cc.Subscribe(ctx, channelOf(key)))
			le, err := l.Acquire(ctx, key, lock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
			want, none := sharded, classic
			if !tc.sharded {
				want, none = classic, sharded
			}
			if got := received(want, 2*time.Second); got != channelOf(key)+" 0" {
				t.Fatalf("the subscriber that should hear the unlock got %q", got)
			}
			if got := received(none, 300*time.Millisecond); got != "" {
				t.Fatalf("the other subscriber heard %q", got)
			}
		})
	}
}

// TestClusterSubscriptionModeSetting: lock.subscriptionMode reaches the library through the
// configuration's options (app.LockOptions) and the service's mode registry: "classic" on a cluster makes the reentrant and fenced releases
// classic again, "auto" sharded (the fenced lock in RFencedLock's layout, lock.fencedLayout:
// redisson, whose release is Redisson's unlock).
func TestClusterSubscriptionModeSetting(t *testing.T) {
	t.Parallel()
	cc := startCluster(t)
	ctx := context.Background()
	for _, setting := range []string{"auto", "classic"} {
		opts := app.LockOptions(config.Lock{Lease: 5 * time.Second, SubscriptionMode: setting, FencedLayout: "redisson"},
			slog.New(slog.DiscardHandler))
		reg, err := modes.NewRegistry(modes.Deps{Data: cc, Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"reentrant", "fenced"} {
			key := "{interop-setting}:" + setting + ":" + mode
			l, _, err := reg.Locker(mode)
			if err != nil {
				t.Fatal(err)
			}
			sharded := subscribed(t, cc.SSubscribe(ctx, "redisson_lock__channel:"+key))
			classic := subscribed(t, cc.Subscribe(ctx, "redisson_lock__channel:"+key))
			le, err := l.Acquire(ctx, key, lock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
			want, none := sharded, classic
			if setting == "classic" {
				want, none = classic, sharded
			}
			if got := received(want, 2*time.Second); got != "redisson_lock__channel:"+key+" 0" {
				t.Errorf("%s, %s: the subscriber that should hear the unlock got %q", setting, mode, got)
			}
			if got := received(none, 200*time.Millisecond); got != "" {
				t.Errorf("%s, %s: the other subscriber heard %q", setting, mode, got)
			}
		}
		if err := reg.Close(); err != nil {
			t.Error(err)
		}
	}
}

// foreignRelease is a Redisson client's unlock on a cluster, written from RLock's protocol:
// delete the hash held by field and announce it with SPUBLISH on the lock's channel.
var foreignRelease = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('del', KEYS[1])
redis.call('spublish', KEYS[2], '0')
return 1`)

// foreignFairRelease is RFairLock's unlock on a cluster: delete the hash and tell the first in
// line on its own channel with SPUBLISH.
var foreignFairRelease = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('del', KEYS[1])
local first = redis.call('lindex', KEYS[2], 0)
if first then redis.call('spublish', KEYS[3] .. ':' .. first, '0') end
return 1`)

// shardSubscribers counts the sharded subscribers of ch on the node that serves it.
func shardSubscribers(ctx context.Context, cc *redis.ClusterClient, ch string) int64 {
	node, err := cc.MasterForKey(ctx, ch)
	if err != nil {
		return 0
	}
	n, err := node.PubSubShardNumSub(ctx, ch).Result()
	if err != nil {
		return 0
	}
	return n[ch]
}

// waitFor polls cond every 5 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClusterWaiterWakesOnForeignSPUBLISH: a waiter of the reentrant and of the fair lock (and of
// the fenced lock in RFencedLock's layout), queued behind a foreign holder whose lock lives 30 s,
// takes the lock as soon as the holder's release is announced with SPUBLISH: within 100 ms
// (median of the rounds), where before the sharded subscription it slept out the holder's TTL.
// The fenced waiter's token comes from RFencedLock's counter, in the lock's slot.
func TestClusterWaiterWakesOnForeignSPUBLISH(t *testing.T) {
	t.Parallel()
	cc := startCluster(t)
	ctx := context.Background()
	const rounds = 5
	const foreign = "java-client-uuid:1"
	for _, mode := range []string{"reentrant", "fair", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			newLock := lock.NewReentrant
			switch mode {
			case "fair":
				newLock = lock.NewFair
			case "fenced":
				newLock = func(rdb redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error) {
					return lock.NewFenced(rdb, append(opts, lock.WithRFencedLockLayout())...)
				}
			}
			l, err := newLock(cc)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var wakes []time.Duration
			for i := range rounds {
				key := "interop-wake-" + mode + "-" + string(rune('a'+i))
				if err := cc.HSet(ctx, key, foreign, 1).Err(); err != nil {
					t.Fatal(err)
				}
				if err := cc.PExpire(ctx, key, 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				got := make(chan error, 1)
				var at time.Time
				go func() {
					le, err := l.Acquire(ctx, key, lock.Options{Wait: 20 * time.Second})
					at = time.Now()
					if err == nil && mode == "fenced" && le.Token() != 1 {
						err = fmt.Errorf("token %d, want 1 from a fresh counter", le.Token())
					}
					if err == nil {
						err = le.Release(ctx)
					}
					got <- err
				}()
				// The release must come after the waiter listens, or it proves nothing.
				queue := "redisson_lock_queue:{" + key + "}"
				waitFor(t, 10*time.Second, "the waiter's sharded subscription", func() bool {
					if mode != "fair" {
						return shardSubscribers(ctx, cc, channelOf(key)) > 0
					}
					first, err := cc.LIndex(ctx, queue, 0).Result()
					return err == nil && shardSubscribers(ctx, cc, channelOf(key)+":"+first) > 0
				})
				released := time.Now()
				var err error
				if mode != "fair" {
					err = foreignRelease.Run(ctx, cc, []string{key, channelOf(key)}, foreign).Err()
				} else {
					err = foreignFairRelease.Run(ctx, cc, []string{key, queue, channelOf(key)}, foreign).Err()
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatal(err)
				}
				wakes = append(wakes, at.Sub(released))
				if mode == "fenced" {
					if n, err := cc.Get(ctx, "redisson_lock_token:{"+key+"}").Int64(); err != nil || n != 1 {
						t.Fatalf("RFencedLock's counter: %d, %v; want 1", n, err)
					}
				}
			}
			slices.Sort(wakes)
			median := wakes[len(wakes)/2]
			t.Logf("%s: wake-up after a foreign SPUBLISH release, sorted: %v (median %v)", mode, wakes, median)
			if median > 100*time.Millisecond {
				t.Errorf("median wake-up %v after the release, want within 100ms", median)
			}
		})
	}
}

// moveSlot migrates key's slot, with its keys, from its master to another one, the way
// redis-cli --cluster reshard does, and returns the new master.
func moveSlot(t *testing.T, cc *redis.ClusterClient, key string) *redis.Client {
	t.Helper()
	ctx := context.Background()
	slot := int(cc.ClusterKeySlot(ctx, key).Val())
	src, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var masters []*redis.Client
	var mu sync.Mutex // ForEachMaster calls in parallel
	if err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var dst *redis.Client
	for _, m := range masters {
		if m.Options().Addr != src.Options().Addr {
			dst = m
			break
		}
	}
	id := func(c *redis.Client) string { return c.Do(ctx, "cluster", "myid").Val().(string) }
	srcID, dstID := id(src), id(dst)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err())
	must(src.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err())
	keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
	must(err)
	if len(keys) > 0 {
		host, port, _ := strings.Cut(dst.Options().Addr, ":")
		args := []any{"migrate", host, port, "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err())
	}
	must(dst.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	must(src.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	for _, m := range masters {
		if m != src && m != dst {
			must(m.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
		}
	}
	return dst
}

// TestClusterSubscriptionFollowsTheSlot: a reentrant waiter's sharded subscription moves with
// its channel's slot: the node that lost the slot ends it, the waiter subscribes again on the
// new owner, and a foreign release announced there still wakes it at once.
func TestClusterSubscriptionFollowsTheSlot(t *testing.T) {
	t.Parallel()
	cc := startCluster(t)
	ctx := context.Background()
	l, err := lock.NewReentrant(cc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const foreign = "java-client-uuid:1"
	key := "interop-moving"
	if err := cc.HSet(ctx, key, foreign, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.PExpire(ctx, key, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var at time.Time
	go func() {
		le, err := l.Acquire(ctx, key, lock.Options{Wait: 25 * time.Second})
		at = time.Now()
		if err == nil {
			err = le.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, 10*time.Second, "the waiter's sharded subscription", func() bool {
		return shardSubscribers(ctx, cc, channelOf(key)) > 0
	})
	dst := moveSlot(t, cc, key)
	waitFor(t, 10*time.Second, "the subscription on the slot's new owner", func() bool {
		n, err := dst.PubSubShardNumSub(ctx, channelOf(key)).Result()
		return err == nil && n[channelOf(key)] > 0
	})
	released := time.Now()
	if err := foreignRelease.Run(ctx, cc, []string{key, channelOf(key)}, foreign).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	woke := at.Sub(released)
	t.Logf("after the slot moved, the waiter took the lock %v after the release", woke)
	if woke > time.Second {
		t.Errorf("the waiter took the lock %v after the release, want at once (its holder's TTL was 30 s)", woke)
	}
}
