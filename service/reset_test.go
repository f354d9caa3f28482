package service_test

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/internal/testredis"
	"seckill/store"
)

// TestResetLeavesNoLockKey: with a lock held in every mode and every key each mode's lock may use
// (Locker.Keys: lines, queues, grant and lag hashes, token counters) present on the data Redis
// and on every master, a reset leaves none of them, nothing under the SKU's lock prefix, and on
// the data Redis only the SKU's own keys (its checkout semaphore among them).
func TestResetLeavesNoLockKey(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	ctx := context.Background()
	sku := f.Cfg.Inventory.Key
	lockKey := func(mode string) string { return store.LockKey(sku, mode) }
	servers := []*redis.Client{f.RDB}
	for _, m := range f.Masters {
		servers = append(servers, testredis.Client(t, m))
	}
	var all []string
	for _, keys := range f.App.Locks.Keys(lockKey) {
		all = append(all, keys...)
	}
	for _, m := range modes.Modes() {
		l, _, err := f.App.Locks.Locker(m.Name)
		if err != nil || l == nil {
			continue
		}
		le, err := l.Acquire(ctx, lockKey(m.Name), lock.Options{Owner: "holder"})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		t.Cleanup(func() { _ = le.Release(context.Background()) })
	}
	for _, c := range servers {
		for _, k := range all {
			if err := c.SetNX(ctx, k, "left", 0).Err(); err != nil { // the keys not there yet
				t.Fatal(err)
			}
		}
	}
	if _, err := f.App.Service.Reset(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	k := store.KeysFor(sku)
	// The checkout semaphore stays: its permits belong to the sales under way, and clearing it
	// would let the limit's buyers and as many more into checkout.
	own := []string{k.Stock, k.Initial, k.Epoch, k.CheckoutOf(f.Cfg.Checkout.Limit)}
	for i, c := range servers {
		left, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range left {
			if i > 0 || !slices.Contains(own, key) {
				t.Errorf("server %d: %q left after the reset", i, key)
			}
		}
	}
}
