package service_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/service"
	"seckill/store"
)

// restockModes are the modes the restock test runs: every safe one, and the lab's none, whose
// lost updates stay (they are its lesson) while a restock still stands.
var restockModes = []string{"lua", "atomic", "reentrant", "fair", "fenced", "multilock", "redlock", "redlock-fenced", "none"}

// A restock to 0 under 50 buyers stands: once it has answered, no sale under way writes over it,
// so the stock stays 0, every sale that starts afterwards is sold out, and the audit stays true
// (no lost update, nothing oversold) across three rounds of restock up, sell, restock to 0. Each
// mode sells its own SKU, side by side.
func TestRestockStandsUnderLoad(t *testing.T) {
	t.Parallel()
	skus := make([]string, len(restockModes))
	for i, m := range restockModes {
		skus[i] = "restock-" + m
	}
	f := apptest.New(t, func(c *config.Config) {
		c.Inventory.Key, c.Inventory.SKUs = skus[0], skus
	})
	for i, mode := range restockModes {
		sku := skus[i]
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc := f.App.Service
			if _, err := svc.Reset(ctx, sku, 0); err != nil {
				t.Fatal(err)
			}
			const buyers, rounds, salesPerRound = 50, 3, 60
			req := service.SaleRequest{SKU: sku, Mode: mode}
			saleCtx := ctx
			if mode != "atomic" {
				// Two milliseconds between the read and the write, where a restock must not be undone
				// (the lab's business time, through its hook).
				saleCtx = modes.WithFaults(ctx, modes.Faults{Work: 2 * time.Millisecond})
			}
			restocked := 0
			for round := range rounds {
				if _, err := svc.Restock(ctx, sku, 1_000_000); err != nil {
					t.Fatal(err)
				}
				var (
					sold    atomic.Int64
					enough  = make(chan struct{})
					once    sync.Once
					after   atomic.Bool // the restock to 0 has answered
					mu      sync.Mutex
					wg      sync.WaitGroup
					outcome = map[string]int{}
					soldAft int
				)
				for range buyers {
					wg.Go(func() {
						for {
							// Sampled before the sale starts: true means it started after the restock answered.
							started := after.Load()
							_, err := svc.Sale(saleCtx, req)
							key := "sold"
							switch {
							case err == nil:
								if sold.Add(1) == salesPerRound {
									once.Do(func() { close(enough) })
								}
							case errors.Is(err, service.ErrSoldOut):
								key = "soldout"
							case errors.Is(err, service.ErrRestocked):
								key = "restocked"
							default:
								key = err.Error()
							}
							mu.Lock()
							outcome[key]++
							if started && err == nil {
								soldAft++
							}
							mu.Unlock()
							if started {
								return
							}
							if key != "sold" && key != "soldout" && key != "restocked" {
								once.Do(func() { close(enough) }) // an unexpected error: stop the round
								return
							}
						}
					})
				}
				<-enough
				// The restock lands while a buyer is inside the section (between its read and its
				// write), not in the hand-over between two, where it could not be undone anyway.
				if mode != "atomic" {
					waitInside(t, f, sku)
				}
				if _, err := svc.Restock(ctx, sku, 0); err != nil {
					t.Fatal(err)
				}
				after.Store(true)
				wg.Wait()
				inv, err := svc.Inventory(ctx, sku)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("round %d: %v; inventory %+v", round, outcome, inv)
				restocked += outcome["restocked"]
				if len(outcome) > 3 || outcome["sold"] < salesPerRound {
					t.Fatalf("round %d: outcomes %v", round, outcome)
				}
				if inv.Stock != 0 || soldAft != 0 {
					t.Fatalf("round %d: after the restock to 0 the stock is %d and %d sales started afterwards sold", round, inv.Stock, soldAft)
				}
				if mode != "none" && (inv.LostUpdates != 0 || inv.Oversold != 0) {
					t.Fatalf("round %d: the audit is wrong after the restock: %+v", round, inv)
				}
				if inv.Sold != inv.InitialStock-inv.Stock+inv.LostUpdates {
					t.Fatalf("round %d: the audit does not add up: %+v", round, inv)
				}
			}
			t.Logf("%s: %d sales answered %q over %d rounds", mode, restocked, service.ErrRestocked, rounds)
		})
	}
}

// waitInside returns once a buyer of sku is inside the critical section.
func waitInside(t *testing.T, f *apptest.Fixture, sku string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for f.RDB.ZCard(ctx, store.KeysFor(sku).InSection).Val() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("no buyer of %s inside the section within 10 s", sku)
		}
	}
}
