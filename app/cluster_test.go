package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/internal/redisproc"
	"seckill/lab/labapp"
	"seckill/service"
	"seckill/store"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/script"
)

// startCluster gives a 3-master Redis Cluster for t, or skips when redis-server/redis-cli are
// not installed.
func startCluster(t *testing.T) *redisproc.Cluster {
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
	return c
}

// TestClusterDataStore runs the service with its data store on a 3-master Redis Cluster and eight
// SKUs spread over the nodes: every script (commit, atomic sale, reset with its lock-key SCAN,
// the single-instance locks, reentrant's unlock PUBLISH) must stay in one slot, and every SKU
// must sell exactly its stock under the safe modes.
func TestClusterDataStore(t *testing.T) {
	t.Parallel() // on a cluster and servers of its own
	cl := startCluster(t)
	cfg, _, _ := apptest.Config(t, 3)
	var skus []string
	for i := 1; i <= 8; i++ {
		skus = append(skus, fmt.Sprintf("inventory%03d", i))
	}
	cfg.Redis.ClusterAddrs = cl.Addrs()
	cfg.Inventory.SKUs = skus
	cfg.Lock.Lease = time.Second
	cfg.Lock.Wait = 10 * time.Second
	if err := cfg.Validate(modes.Names()); err != nil {
		t.Fatal(err)
	}
	if cfg.DataMode() != "cluster" {
		t.Fatalf("data mode %s, want cluster", cfg.DataMode())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.New(ctx, cfg, app.NewLogger(io.Discard, "warn"), labapp.Lab{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cc := cl.Client()
	defer cc.Close()

	// The SKUs really are spread over the masters (else the test proves little), and each SKU's
	// keys share its stock key's slot.
	nodes := map[string]bool{}
	for _, sku := range skus {
		m, err := cc.MasterForKey(ctx, sku)
		if err != nil {
			t.Fatal(err)
		}
		nodes[m.Options().Addr] = true
		k := store.KeysFor(sku)
		slot := redis.NewCmd(ctx, "cluster", "keyslot", sku)
		if err := cc.Process(ctx, slot); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{k.Orders, k.Initial, k.Fence, store.LockKey(sku, "reentrant")} {
			s2, err := cc.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := slot.Int64(); s2 != want {
				t.Errorf("%s is in slot %d, %s in %d", key, s2, sku, want)
			}
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("the 8 SKUs all landed on %v; want them spread over the masters", nodes)
	}
	// EnsureStock wrote every stock key under its plain name, as redis-cli get shows it.
	for _, sku := range skus {
		if v, err := cc.Get(ctx, sku).Result(); err != nil || v != fmt.Sprint(cfg.Inventory.Stock) {
			t.Fatalf("GET %s on the cluster: %q, %v", sku, v, err)
		}
	}

	svc := a.Service
	const stock, buyers = 12, 20
	// Every mode: the single-instance ones keep their lock keys on the cluster, multilock and
	// redlock on the independent masters. Safe modes must sell exactly; the unsafe ones (no
	// faults injected here) must at least never fail on a cross-slot script.
	for _, m := range modes.Modes() {
		mode := m.Name
		t.Run(mode, func(t *testing.T) {
			// A lock key left behind (as a crashed holder would) must be cleared by the reset,
			// whose SCAN runs inside the Lua script on the node that owns the SKU's slot.
			for _, sku := range skus {
				if err := cc.Set(ctx, store.LockKey(sku, "setnx"), "stale", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if _, err := svc.Reset(ctx, sku, stock); err != nil {
					t.Fatalf("reset %s: %v", sku, err)
				}
				if n, err := cc.Exists(ctx, store.LockKey(sku, "setnx")).Result(); err != nil || n != 0 {
					t.Fatalf("reset %s left its lock key (exists %d, %v)", sku, n, err)
				}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			kinds := map[string]int{}
			for _, sku := range skus {
				for range buyers {
					wg.Go(func() {
						_, err := svc.Sale(ctx, service.SaleRequest{SKU: sku, Mode: mode})
						k := "sold"
						switch {
						case errors.Is(err, service.ErrSoldOut):
							k = "soldout"
						case err != nil:
							k = err.Error()
						}
						mu.Lock()
						kinds[k]++
						mu.Unlock()
					})
				}
			}
			wg.Wait()
			for k := range kinds {
				if k != "sold" && k != "soldout" {
					t.Errorf("answers %v: want only sold and sold out", kinds)
				}
			}
			if !m.Safe {
				return
			}
			want := map[string]int{"sold": stock * len(skus), "soldout": (buyers - stock) * len(skus)}
			if fmt.Sprint(kinds) != fmt.Sprint(want) {
				t.Errorf("answers %v, want %v", kinds, want)
			}
			all, err := svc.InventoryAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != len(skus) {
				t.Fatalf("inventory lists %d SKUs, want %d", len(all), len(skus))
			}
			for _, inv := range all {
				if inv.Sold != stock || inv.Stock != 0 || inv.LostUpdates != 0 || inv.Oversold != 0 || inv.Overlaps != 0 {
					t.Errorf("%s: sold %d stock %d lost %d oversold %d overlaps %d; want %d sold, nothing else",
						inv.SKU, inv.Sold, inv.Stock, inv.LostUpdates, inv.Oversold, inv.Overlaps, stock)
				}
			}
		})
	}

	// reentrant's waiters sleep until the holder's unlock PUBLISH (or its PTTL): on a cluster the
	// message must still reach a waiter whose subscription sits on whichever node. The holder's
	// lease is far longer than the wait, so only the message can wake the waiter in time.
	t.Run("unlock message wakes waiters", func(t *testing.T) {
		locker, _, err := a.Locks.Locker("reentrant")
		if err != nil {
			t.Fatal(err)
		}
		for _, sku := range skus {
			key := store.LockKey(sku, "reentrant")
			holder, err := locker.Acquire(ctx, key,
				lock.Options{Owner: "holder", Lease: time.Minute, ExplicitLease: true})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			start := time.Now()
			go func() {
				le, err := locker.Acquire(ctx, key, lock.Options{Owner: "waiter", Wait: 5 * time.Second})
				if err == nil {
					err = le.Release(ctx)
				}
				got <- err
			}()
			time.Sleep(200 * time.Millisecond)
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s: waiter: %v", sku, err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("%s: the waiter took %s: not woken by the unlock message", sku, took)
			}
		}
	})

	// A Java Redisson client on a Redis 7 cluster announces its unlock with SPUBLISH
	// (shardedSubscriptionMode AUTO): a sale queued behind its hold must finish at once, not when
	// the hold's 30 s TTL runs out (docs/interop.md).
	t.Run("sale wakes on a foreign SPUBLISH", func(t *testing.T) {
		spublishRelease := redis.NewScript(`
redis.call('del', KEYS[1])
local first = redis.call('lindex', KEYS[2], 0)
if first then
  redis.call('spublish', KEYS[3] .. ':' .. first, '0')
else
  redis.call('spublish', KEYS[3], '0')
end
return 1`)
		for _, mode := range []string{"reentrant", "fair"} {
			sku := skus[0]
			if _, err := svc.Reset(ctx, sku, stock); err != nil {
				t.Fatal(err)
			}
			key := store.LockKey(sku, mode)
			// The names a Redisson client uses, from the library (lock/script), not spelled here.
			queue := script.Prefixed(script.RedissonQueuePrefix, key)
			channel := script.Prefixed(script.RedissonChannelPrefix, key)
			if err := cc.HSet(ctx, key, "java-uuid:1", 1).Err(); err != nil {
				t.Fatal(err)
			}
			if err := cc.PExpire(ctx, key, 30*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			var done time.Time
			go func() {
				_, err := svc.Sale(ctx, service.SaleRequest{SKU: sku, Mode: mode})
				done = time.Now()
				got <- err
			}()
			node, err := cc.MasterForKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			// Released only once the sale listens (sharded, on the key's node), or it proves nothing.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				ch := channel
				if mode == "fair" {
					ch += ":" + cc.LIndex(ctx, queue, 0).Val()
				}
				if node.PubSubShardNumSub(ctx, ch).Val()[ch] > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: the sale never subscribed with SSUBSCRIBE", mode)
				}
			}
			released := time.Now()
			if err := spublishRelease.Run(ctx, cc, []string{key, queue, channel}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s: sale: %v", mode, err)
			}
			took := done.Sub(released)
			t.Logf("%s: the sale finished %v after the foreign SPUBLISH release", mode, took)
			if took > time.Second {
				t.Errorf("%s: the sale finished %v after the release, want within 1 s", mode, took)
			}
		}
	})

	// The read-only lock view scans every master of the cluster: a held lock shows up whichever
	// node owns its SKU.
	t.Run("locks view", func(t *testing.T) {
		locker, _, err := a.Locks.Locker("reentrant")
		if err != nil {
			t.Fatal(err)
		}
		for _, sku := range skus {
			le, err := locker.Acquire(ctx, store.LockKey(sku, "reentrant"), lock.Options{Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			view := a.Locks.Inspect(ctx, store.KeysFor(sku).LockPrefix, func(mode string) string { return store.LockKey(sku, mode) })
			if len(view) == 0 || view[0].Name != "data" || view[0].Error != "" || len(view[0].Keys) != 1 ||
				len(view[0].Keys[0].Holders) != 1 {
				t.Errorf("%s: the data entry of the lock view is %+v; want the one held lock", sku, view[0])
			}
			if want := "cluster " + strings.Join(cl.Addrs(), ","); view[0].Addr != want {
				t.Errorf("the data entry names %q, want %q", view[0].Addr, want)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestClusterConfigNeedsNoDataAddr: a cluster data store does not start an in-process Redis for
// redis.addr (nothing is stored there).
func TestClusterDataModeAddresses(t *testing.T) {
	cfg, err := config.Load("", func(k string) string {
		if k == "SECKILL_REDIS_CLUSTERADDRS" {
			return "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
		}
		return ""
	}, modes.Names())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataMode() != "cluster" || len(cfg.Redis.ClusterAddrs) != 3 {
		t.Fatalf("mode %s addrs %v", cfg.DataMode(), cfg.Redis.ClusterAddrs)
	}
	for _, a := range cfg.Addresses() {
		if a == cfg.Redis.Addr {
			t.Fatalf("addresses %v include the unused redis.addr", cfg.Addresses())
		}
	}
}
