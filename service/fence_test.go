package service_test

import (
	"context"
	"testing"

	"seckill/internal/apptest"
	"seckill/service"
)

// fenced and redlock-fenced draw their tokens from counters of their own (the data Redis's, the
// masters'): sales under one mode followed by the other still sell until the stock is out, each
// mode's tokens fenced only against its own.
func TestFencedModesTakeTurnsUntilSoldOut(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	reset(t, f, 60)
	for i, phase := range []struct {
		mode string
		n    int
	}{{"fenced", 20}, {"redlock-fenced", 20}, {"fenced", 10}, {"redlock-fenced", 10}} {
		out := buy(t, f, phase.n, service.SaleRequest{Mode: phase.mode})
		if out["sold"] != phase.n {
			t.Fatalf("phase %d, %d buyers under %s: %v, want every one sold", i, phase.n, phase.mode, out)
		}
	}
	for _, mode := range []string{"fenced", "redlock-fenced"} {
		if out := buy(t, f, 5, service.SaleRequest{Mode: mode}); out["soldout"] != 5 {
			t.Fatalf("%s after the stock is out: %v, want 5 sold out", mode, out)
		}
	}
	inv, err := f.App.Service.Inventory(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if inv.Stock != 0 || inv.Sold != 60 || inv.LostUpdates != 0 || inv.StaleRejected != 0 {
		t.Fatalf("inventory %+v, want 60 sold, stock 0, nothing lost or refused", inv)
	}
	v, err := f.App.Service.LockKeys(context.Background(), "")
	if err != nil || v.FenceTokens["fenced"] < 30 || v.FenceTokens["redlock-fenced"] < 30 || v.FenceToken != v.FenceTokens["fenced"] {
		t.Fatalf("/locks fences %v (fenceToken %d), %v: want each mode's own, at least 30", v.FenceTokens, v.FenceToken, err)
	}
}
