package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/service"
	"seckill/store"
)

// buy runs n concurrent buyers of req against f's service and counts the outcomes.
func buy(t *testing.T, f *apptest.Fixture, n int, req service.SaleRequest) map[string]int {
	t.Helper()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[string]int{}
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := f.App.Service.Sale(context.Background(), req)
			key := "sold"
			switch {
			case err == nil:
			case errors.Is(err, service.ErrSoldOut):
				key = "soldout"
			default:
				key = err.Error()
			}
			mu.Lock()
			out[key]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func reset(t *testing.T, f *apptest.Fixture, stock int64) {
	t.Helper()
	if _, err := f.App.Service.Reset(context.Background(), "", stock); err != nil {
		t.Fatal(err)
	}
}

// 200 buyers meet a stock of 50: the safe modes sell exactly 50 with no lost update.
func TestSafeModesSellExactlyTheStock(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	for _, mode := range []string{"lua", "atomic"} {
		t.Run(mode, func(t *testing.T) {
			reset(t, f, 50)
			out := buy(t, f, 200, service.SaleRequest{Mode: mode})
			inv, err := f.App.Service.Inventory(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: outcomes %v, inventory %+v", mode, out, inv)
			if out["sold"] != 50 || out["soldout"] != 150 {
				t.Fatalf("buyers saw %v, want 50 sold and 150 sold out", out)
			}
			if inv.Sold != 50 || inv.Stock != 0 || inv.LostUpdates != 0 || inv.Oversold != 0 || inv.Overlaps != 0 {
				t.Fatalf("inventory %+v", inv)
			}
		})
	}
}

// The commit and the release of a sale go out in one pipeline (with the leave of the section
// between them when the lab counts overlaps); the locks on several servers execute it before
// their release. 200 buyers at a stock of 50 still buy exactly 50, with no lost update, no
// overlap, and no lock left behind, with the lab on and off.
func TestJoinedReleaseSellsExactlyTheStock(t *testing.T) {
	t.Parallel()
	for _, lab := range []bool{true, false} {
		f := apptest.New(t, func(c *config.Config) {
			c.Lab.Enabled = lab
			// 200 buyers go through one lock in turn: on a busy machine, with in-process Redis,
			// the last of them waited more than the default 5 s. The exact stock is the point,
			// not the wait.
			c.Lock.Wait = 30 * time.Second
		})
		for _, mode := range []string{"lua", "fenced", "reentrant", "fair", "multilock", "redlock"} {
			t.Run(fmt.Sprintf("lab=%v/%s", lab, mode), func(t *testing.T) {
				reset(t, f, 50)
				out := buy(t, f, 200, service.SaleRequest{Mode: mode})
				inv, err := f.App.Service.Inventory(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				if out["sold"] != 50 || out["soldout"] != 150 {
					t.Fatalf("buyers saw %v, want 50 sold and 150 sold out", out)
				}
				if inv.Sold != 50 || inv.Stock != 0 || inv.LostUpdates != 0 || inv.Oversold != 0 || inv.Overlaps != 0 {
					t.Fatalf("inventory %+v", inv)
				}
				if n := f.RDB.Exists(context.Background(), store.LockKey(f.App.Service.SKUs()[0], mode)).Val(); n != 0 {
					t.Errorf("the lock key is left behind after the last sale")
				}
				if n := f.RDB.ZCard(context.Background(), store.KeysFor(f.App.Service.SKUs()[0]).InSection).Val(); n != 0 {
					t.Errorf("%d buyers still inside the section after the last sale", n)
				}
			})
		}
	}
}

// With no lock the read-check-write race is real: concurrent buyers read the same stock and
// overwrite each other's decrement, so more orders are recorded than stock went down.
func TestNoLockLosesUpdates(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	reset(t, f, 50)
	out := buy(t, f, 200, service.SaleRequest{Mode: "none"})
	inv, err := f.App.Service.Inventory(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("none: outcomes %v, inventory %+v", out, inv)
	if inv.LostUpdates <= 0 {
		t.Fatalf("no lost update observed: %+v", inv)
	}
	if inv.Sold != int64(out["sold"]) {
		t.Fatalf("orders %d != sales the buyers saw %d", inv.Sold, out["sold"])
	}
}
