package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/script"

	"seckill/app"
	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/service"
	"seckill/store"
)

// checkoutGauge counts the buyers holding a checkout permit, over every instance it observes:
// from the moment a permit is taken to the moment its release is sent. Until opened, the first
// buyers to enter wait inside their permit, so the test sees the limit reached and held.
type checkoutGauge struct {
	service.Observer
	t          *testing.T
	limit      int
	mu         sync.Mutex
	now, peak  int
	enters     int
	full, open chan struct{}
	fullOnce   sync.Once
}

func newCheckoutGauge(t *testing.T, o service.Observer, limit int) *checkoutGauge {
	return &checkoutGauge{Observer: o, t: t, limit: limit, full: make(chan struct{}), open: make(chan struct{})}
}

func (g *checkoutGauge) ObserveCheckout(sku, event string) {
	g.Observer.ObserveCheckout(sku, event)
	g.mu.Lock()
	switch event {
	case service.CheckoutEnter:
		g.now++
		g.enters++
		g.peak = max(g.peak, g.now)
		if g.now == g.limit {
			g.fullOnce.Do(func() { close(g.full) })
		}
	case service.CheckoutLeave:
		g.now--
	}
	g.mu.Unlock()
	if event == service.CheckoutEnter {
		select {
		case <-g.open:
		case <-time.After(3 * time.Second):
			g.t.Errorf("a buyer waited 3 s inside its permit for the limit to be reached")
		}
	}
}

func (g *checkoutGauge) counts() (now, peak, enters int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.peak, g.enters
}

// checkoutFixture is a service with a checkout limit (and waits of 2 s, so that no buyer is
// refused on a busy machine) and the stock set to stock.
func checkoutFixture(t *testing.T, limit int, stock int64) *apptest.Fixture {
	t.Helper()
	f := apptest.New(t, func(c *config.Config) {
		c.Checkout.Limit, c.Checkout.Wait, c.Lock.Wait = limit, 2*time.Second, 2*time.Second
	})
	reset(t, f, stock)
	return f
}

// secondInstance is another instance of f's service on the same Redis servers: its own lock
// registry and checkout semaphore, as a second process has.
func secondInstance(t *testing.T, f *apptest.Fixture) *service.Service {
	t.Helper()
	log := f.App.Log
	reg, err := modes.NewRegistry(modes.Deps{Data: f.App.Data, Masters: f.App.Masters, InstanceID: uuid.NewString(),
		Options: app.LockOptions(f.Cfg.Lock, log)})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := lock.NewExpirableSemaphore(f.App.Data, app.LockOptions(f.Cfg.Lock, log)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sem.Close(); _ = reg.Close() })
	set := app.Settings(f.Cfg)
	set.Instance += "-2"
	svc := service.New(store.New(f.App.Data), reg, set, nil, log)
	svc.SetCheckout(sem)
	return svc
}

// sell runs one sale per service given, all at once, and counts the outcomes.
func sell(svcs []*service.Service, req service.SaleRequest) map[string]int {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[string]int{}
	)
	for _, svc := range svcs {
		wg.Go(func() {
			_, err := svc.Sale(context.Background(), req)
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
		})
	}
	wg.Wait()
	return out
}

// Buyers on two instances, six times the limit of 4: once 4 hold a permit, Redis has none
// left, and each permit's expiry in Redis is within its sale's bound. At no moment do more than
// 4 hold one, and exactly the stock is sold, nothing oversold.
func TestCheckoutLimitHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	const limit, buyers, stock = 4, 24, 16
	f := checkoutFixture(t, limit, stock)
	g := newCheckoutGauge(t, f.App.Metrics, limit)
	other := secondInstance(t, f)
	f.App.Service.SetObserver(g)
	other.SetObserver(g)
	svcs := make([]*service.Service, buyers)
	for i := range svcs {
		svcs[i] = []*service.Service{f.App.Service, other}[i%2]
	}
	name := store.KeysFor(f.Cfg.Inventory.Key).CheckoutOf(limit)
	done := make(chan map[string]int, 1)
	go func() { done <- sell(svcs, service.SaleRequest{Mode: "lua"}) }()
	select {
	case <-g.full:
	case <-time.After(3 * time.Second):
		t.Fatal("the buyers never held all 4 permits")
	}
	ctx := context.Background()
	if n, err := f.App.Checkout.AvailablePermits(ctx, name); err != nil || n != 0 {
		t.Errorf("with 4 permits held, Redis counts %d available (%v), want 0", n, err)
	}
	// Within the sale's deadline (2 s lock wait, 2 s checkout wait, 10 s slack) and its release's 5 s.
	expiries, err := f.RDB.ZRangeWithScores(ctx, script.Suffixed(name, script.PermitTimeoutSuffix), 0, -1).Result()
	if err != nil || len(expiries) != limit {
		t.Errorf("the permits held in Redis: %v (%v), want %d", expiries, err, limit)
	}
	for _, e := range expiries {
		if left := time.Until(time.UnixMilli(int64(e.Score))); left <= 0 || left > 19*time.Second {
			t.Errorf("a permit's lease ends in %s, want within the sale's 19 s", left)
		}
	}
	close(g.open)
	out := <-done
	now, peak, enters := g.counts()
	t.Logf("outcomes %v; at most %d in checkout at once, %d entered", out, peak, enters)
	if peak != limit || now != 0 || enters != buyers {
		t.Fatalf("%d in checkout at most, %d left inside, %d entered: want %d, 0 and %d", peak, now, enters, limit, buyers)
	}
	if out["sold"] != stock || out["soldout"] != buyers-stock {
		t.Fatalf("buyers saw %v, want %d sold and %d sold out", out, stock, buyers-stock)
	}
	inv, err := f.App.Service.Inventory(ctx, "")
	if err != nil || inv.Sold != stock || inv.Stock != 0 || inv.Oversold != 0 || inv.LostUpdates != 0 {
		t.Fatalf("inventory %+v (%v)", inv, err)
	}
	// The permits are given back beside the buyers' answers: the last ones may still be on their
	// way when the last answer comes.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := f.App.Checkout.AvailablePermits(ctx, name)
		if err == nil && n == limit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the sales %d permits available (%v), want all %d back", n, err, limit)
		}
	}
}

// An instance that dies holding every permit does not shrink the limit: its permits come back
// when their leases end, and then as many buyers as the limit hold one at once again.
func TestCheckoutPermitsOfADeadInstanceComeBack(t *testing.T) {
	t.Parallel()
	const limit, lease = 3, 400 * time.Millisecond
	f := checkoutFixture(t, limit, 10)
	ctx := context.Background()
	name := store.KeysFor(f.Cfg.Inventory.Key).CheckoutOf(limit)
	// The dead instance: its permits are in Redis, and nothing of it will renew or release them.
	dead, err := lock.NewExpirableSemaphore(f.App.Data)
	if err != nil {
		t.Fatal(err)
	}
	for range limit {
		if _, err := dead.TryAcquire(ctx, name, lease); err != nil {
			t.Fatal(err)
		}
	}
	_ = dead.Close()
	died := time.Now()
	if _, err := f.App.Checkout.TryAcquire(ctx, name, time.Second); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("with the dead instance's %d permits held, a permit was taken (%v)", limit, err)
	}
	g := newCheckoutGauge(t, f.App.Metrics, limit)
	f.App.Service.SetObserver(g)
	svcs := []*service.Service{f.App.Service, f.App.Service, f.App.Service}
	done := make(chan map[string]int, 1)
	go func() { done <- sell(svcs, service.SaleRequest{Mode: "reentrant"}) }()
	select {
	case <-g.full:
	case <-time.After(3 * time.Second):
		t.Fatal("the dead instance's permits never came back: the limit shrank")
	}
	if took := time.Since(died); took < lease-50*time.Millisecond {
		t.Errorf("the buyers held every permit %s after the death, before the dead one's leases of %s ended", took, lease)
	}
	close(g.open)
	if out := <-done; out["sold"] != limit {
		t.Fatalf("buyers saw %v, want %d sold", out, limit)
	}
	if _, peak, _ := g.counts(); peak != limit {
		t.Fatalf("%d in checkout at most, want %d", peak, limit)
	}
}

// checkout.limit=0 is the service without a checkout: no semaphore, no permit taken, no key in
// Redis, nothing in /locks, and the buyers served as before.
func TestCheckoutLimitOff(t *testing.T) {
	t.Parallel()
	f := checkoutFixture(t, 0, 20)
	if f.App.Checkout != nil {
		t.Fatal("a checkout semaphore with checkout.limit=0")
	}
	g := newCheckoutGauge(t, f.App.Metrics, 1)
	close(g.open)
	f.App.Service.SetObserver(g)
	out := buy(t, f, 40, service.SaleRequest{Mode: "lua"})
	if out["sold"] != 20 || out["soldout"] != 20 {
		t.Fatalf("buyers saw %v, want 20 sold and 20 sold out", out)
	}
	if _, _, enters := g.counts(); enters != 0 {
		t.Fatalf("%d checkout permits taken with the limit off", enters)
	}
	ctx := context.Background()
	if keys, err := f.RDB.Keys(ctx, "*checkout*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("checkout keys in Redis with the limit off: %v (%v)", keys, err)
	}
	if v, err := f.App.Service.LockKeys(ctx, ""); err != nil || v.Checkout != nil {
		t.Fatalf("/locks with the limit off: %+v (%v), want no checkout", v.Checkout, err)
	}
}
