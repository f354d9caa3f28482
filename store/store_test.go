package store_test

import (
	"context"
	"errors"
	"testing"

	"seckill/internal/testredis"
	"seckill/store"
)

// newStore gives each test a data Redis of its own with sku at stock.
func newStore(t *testing.T, sku string, stock int64) *store.Store {
	t.Helper()
	st := store.New(testredis.Client(t, testredis.Start(t)))
	if err := st.Reset(t.Context(), sku, stock); err != nil {
		t.Fatal(err)
	}
	return st
}

// A write built from a read taken before a restock (or a reset) writes nothing, with a fencing
// token and without; one read after it writes as before; an unchecked write (Epoch 0) writes.
func TestCommitAfterRestockWritesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		token int64
		reset bool
	}{{"plain", 0, false}, {"fenced", 7, false}, {"plain-reset", 0, true}, {"fenced-reset", 7, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const sku = "sku-epoch"
			st := newStore(t, sku, 10)
			before, err := st.ReadStock(ctx, sku, tc.token, store.CounterFenced)
			if err != nil || before.Stale || before.Stock != 10 || before.Epoch < 1 {
				t.Fatalf("read %+v, %v", before, err)
			}
			if tc.reset {
				err = st.Reset(ctx, sku, 0)
			} else {
				err = st.Restock(ctx, sku, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			cr, err := st.Commit(ctx, sku, before.Stock-1, store.Order{ID: "old", Token: tc.token, Epoch: before.Epoch})
			if err != nil {
				t.Fatal(err)
			}
			inv, err := st.Snapshot(ctx, sku)
			if err != nil {
				t.Fatal(err)
			}
			if !cr.Restocked || cr.Stale || inv.Stock != 0 || inv.Sold != 0 || inv.LostUpdates != 0 {
				t.Fatalf("a write read before the restock: %+v, inventory %+v; want refused, stock 0, nothing sold", cr, inv)
			}
			if !tc.reset {
				if err := st.Restock(ctx, sku, 5); err != nil {
					t.Fatal(err)
				}
			} else if err := st.Reset(ctx, sku, 5); err != nil {
				t.Fatal(err)
			}
			after, err := st.ReadStock(ctx, sku, tc.token+1, store.CounterFenced)
			if err != nil || after.Stock != 5 || after.Epoch <= before.Epoch {
				t.Fatalf("read after the restock %+v (before %+v), %v", after, before, err)
			}
			cr, err = st.Commit(ctx, sku, after.Stock-1, store.Order{ID: "new", Token: after.Newest, Epoch: after.Epoch})
			if err != nil || cr.Restocked || cr.Stale {
				t.Fatalf("a write read after the restock: %+v, %v", cr, err)
			}
			// Epoch 0: the lab's and the bench's own writes, which never meet a restock, are not checked.
			cr, err = st.Commit(ctx, sku, 3, store.Order{ID: "unchecked"})
			if err != nil || cr.Restocked {
				t.Fatalf("an unchecked write: %+v, %v", cr, err)
			}
			inv, err = st.Snapshot(ctx, sku)
			if err != nil || inv.Stock != 3 || inv.Sold != 2 {
				t.Fatalf("inventory %+v, %v; want stock 3, 2 sold", inv, err)
			}
		})
	}
}

// A fresh stock's epoch counter starts from the server's clock, not 0, and a corrupt epoch
// counter is ErrCorrupt.
func TestReadStockEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testredis.Client(t, testredis.Start(t))
	st := store.New(rdb)
	const sku = "sku-fresh"
	if created, err := st.EnsureStock(ctx, sku, 4); err != nil || !created {
		t.Fatalf("ensure: %v, %v", created, err)
	}
	clock, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []int64{0, 3} {
		r, err := st.ReadStock(ctx, sku, token, store.CounterRedlock)
		if err != nil || r.Stock != 4 || r.Epoch <= 1 || r.Epoch > clock.UnixMilli()+1 {
			t.Fatalf("token %d: read %+v, %v; want stock 4 at an epoch from the clock (<= %d)", token, r, err, clock.UnixMilli()+1)
		}
	}
	if err := rdb.Set(ctx, store.KeysFor(sku).Epoch, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReadStock(ctx, sku, 0, ""); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupt epoch: %v, want ErrCorrupt", err)
	}
}

// A Redis that lost its data (restarted empty) and was restocked never gives back an epoch a sale
// read before the loss: that sale's write is refused, whatever the counter was (here 1, whose
// epoch 2 a counter started again from 0 would reach at the first restock).
func TestEpochAfterDataLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testredis.Client(t, testredis.Start(t))
	st := store.New(rdb)
	const sku = "sku-lost"
	k := store.KeysFor(sku)
	if err := st.Reset(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, k.Epoch, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := st.ReadStock(ctx, sku, 0, "")
	if err != nil || before.Epoch != 2 {
		t.Fatalf("read before the loss: %+v, %v; want epoch 2", before, err)
	}
	if err := rdb.Del(ctx, k.Stock, k.Initial, k.Orders, k.Epoch).Err(); err != nil {
		t.Fatal(err)
	}
	if err := st.Restock(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	cr, err := st.Commit(ctx, sku, before.Stock-1, store.Order{ID: "before-the-loss", Epoch: before.Epoch})
	if err != nil || !cr.Restocked {
		t.Fatalf("commit of a read before the loss: %+v, %v; want refused as restocked", cr, err)
	}
	if n, err := rdb.LLen(ctx, k.Orders).Result(); err != nil || n != 0 {
		t.Fatalf("orders after the refused write: %d, %v; want 0", n, err)
	}
}

// Each token counter has a fence of its own: a high token of one counter refuses nothing of
// another, and refuses an older token of its own; a reset clears every fence.
func TestFencePerCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const sku = "sku-fences"
	st := newStore(t, sku, 10)
	high, err := st.ReadStock(ctx, sku, 3000, store.CounterFenced)
	if err != nil || high.Stale {
		t.Fatalf("read with token 3000: %+v, %v", high, err)
	}
	for _, c := range []string{store.CounterRedlock, store.CounterRFenced} {
		r, err := st.ReadStock(ctx, sku, 5, c)
		if err != nil || r.Stale {
			t.Fatalf("counter %q, token 5 after the fenced counter's 3000: %+v, %v; want read", c, r, err)
		}
		cr, err := st.Commit(ctx, sku, r.Stock-1, store.Order{ID: c, Token: 5, Counter: c, Epoch: r.Epoch})
		if err != nil || cr.Stale || cr.Restocked {
			t.Fatalf("counter %q, commit with token 5: %+v, %v; want written", c, cr, err)
		}
		if r, err := st.ReadStock(ctx, sku, 4, c); err != nil || !r.Stale || r.Newest != 5 {
			t.Fatalf("counter %q, token 4 after its own 5: %+v, %v; want stale (newest 5)", c, r, err)
		}
	}
	if r, err := st.ReadStock(ctx, sku, 2999, store.CounterFenced); err != nil || !r.Stale {
		t.Fatalf("fenced token 2999 after 3000: %+v, %v; want stale", r, err)
	}
	for c, want := range map[string]int64{store.CounterFenced: 3000, store.CounterRedlock: 5, store.CounterRFenced: 5} {
		if n, err := st.FenceToken(ctx, sku, c); err != nil || n != want {
			t.Fatalf("fence of %q: %d, %v; want %d", c, n, err, want)
		}
	}
	if err := st.Reset(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	for _, c := range store.Counters {
		if n, err := st.FenceToken(ctx, sku, c); err != nil || n != 0 {
			t.Fatalf("fence of %q after a reset: %d, %v; want 0", c, n, err)
		}
	}
}
