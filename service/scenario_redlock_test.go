package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/handler"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/internal/testredis"
	"seckill/lab/labapp"
	"seckill/store"
)

// Row 9 of docs/lab.md (redlock) through the HTTP API of a whole service on real Redis
// servers: no lost update and no overlap with every master up and with one of three down;
// nothing sold with two of three down; renewal through a long business time; a holder whose
// renewal cannot reach a majority learns it lost the lock; the same with five masters.

// rlApp starts a service in lock mode redlock over the given number of masters.
func rlApp(t *testing.T, masters int, lease, wait time.Duration) *apptest.Fixture {
	t.Helper()
	edit := func(c *config.Config) {
		c.Lock.Mode = "redlock"
		c.Lock.Lease = lease
		c.Lock.Wait = wait
	}
	if masters == 3 {
		return apptest.New(t, edit)
	}
	cfg, data, ms := apptest.Config(t, masters)
	edit(&cfg)
	return rlInstance(t, &apptest.Fixture{Cfg: cfg, Data: data, Masters: ms, RDB: testredis.Client(t, data)}, cfg)
}

// rlInstance starts one more service instance with cfg on f's Redis servers (as a second
// instance behind nginx would be). It must start while every master answers.
func rlInstance(t *testing.T, f *apptest.Fixture, cfg config.Config) *apptest.Fixture {
	t.Helper()
	if err := cfg.Validate(modes.Names()); err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler), labapp.Lab{})
	if err != nil {
		t.Fatalf("app: %v", err)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() { srv.Close(); a.Close() })
	return &apptest.Fixture{Cfg: cfg, App: a, HTTP: srv, Data: f.Data, Masters: f.Masters, RDB: f.RDB}
}

// rlShortWait starts a second instance of f whose buyers wait only wait for the lock, so that
// sales that cannot get it answer quickly.
func rlShortWait(t *testing.T, f *apptest.Fixture, wait time.Duration) *apptest.Fixture {
	t.Helper()
	cfg := f.Cfg
	cfg.Redis.Masters = slices.Clone(cfg.Redis.Masters)
	cfg.Lock.Wait = wait
	cfg.Server.Instance += "-short-wait"
	return rlInstance(t, f, cfg)
}

// rlDo sends one request and decodes the JSON answer; it may run in goroutines.
func rlDo(f *apptest.Fixture, method, path string, out any) (int, error) {
	req, err := http.NewRequest(method, f.HTTP.URL+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := f.HTTP.Client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("decode %s %s (status %d): %w", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

func rlReset(t *testing.T, f *apptest.Fixture, stock int64) {
	t.Helper()
	var inv store.Inventory
	status, err := rlDo(f, http.MethodPost, fmt.Sprintf("/inventory/reset?stock=%d", stock), &inv)
	if err != nil || status != http.StatusOK || inv.Stock != stock {
		t.Fatalf("reset to %d: status %d, %+v, %v", stock, status, inv, err)
	}
}

func rlInventory(t *testing.T, f *apptest.Fixture) store.Inventory {
	t.Helper()
	var inv store.Inventory
	status, err := rlDo(f, http.MethodGet, "/inventory", &inv)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /inventory: status %d, %v", status, err)
	}
	return inv
}

// rlBuyers fires n concurrent sales with query q and counts the answers by HTTP status.
func rlBuyers(t *testing.T, f *apptest.Fixture, n int, q string) map[int]int {
	t.Helper()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		statuses = map[int]int{}
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			var body handler.SaleBody
			status, err := rlDo(f, http.MethodPost, "/inventory/sale?lock=redlock&"+q, &body)
			if err != nil {
				t.Errorf("sale: %v", err)
			}
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return statuses
}

// rlCheckClean asserts the audit shows no anomaly and wantSold sales.
func rlCheckClean(t *testing.T, f *apptest.Fixture, initial, wantSold int64) {
	t.Helper()
	inv := rlInventory(t, f)
	t.Logf("inventory %+v", inv)
	if inv.Sold != wantSold || inv.Stock != initial-wantSold || inv.LostUpdates != 0 || inv.Oversold != 0 || inv.Overlaps != 0 {
		t.Fatalf("inventory %+v, want sold %d, stock %d, no lost update, no oversell, no overlap",
			inv, wantSold, initial-wantSold)
	}
}

// rlMasterKeys counts the masters (of those listed) still holding the redlock key once the
// releases have settled. A release returns when a quorum has deleted (fail-fast) and the delete on
// the last master may still be on its way, so a key is given up to a quarter of the lease to go;
// a release that never arrives would leave it for the whole lease.
func rlMasterKeys(t *testing.T, f *apptest.Fixture, idx ...int) int {
	t.Helper()
	key := store.LockKey(f.Cfg.Inventory.Key, "redlock")
	deadline := time.Now().Add(f.Cfg.Lock.Lease / 4)
	for {
		n := 0
		for _, i := range idx {
			c := redis.NewClient(&redis.Options{Addr: f.Masters[i].Addr})
			got, err := c.Exists(t.Context(), key).Result()
			_ = c.Close()
			if err != nil {
				t.Fatalf("EXISTS on master %d: %v", i, err)
			}
			n += int(got)
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A small business time widens the read-check-write window, so a lock that did not exclude
// would show lost updates and overlaps.
const rlWork = "workMs=1"

func TestScenarioRedlockAllMastersUpSellsExactlyTheStock(t *testing.T) {
	t.Parallel()
	f := rlApp(t, 3, 2*time.Second, 20*time.Second)
	rlReset(t, f, 50)
	got := rlBuyers(t, f, 100, rlWork)
	t.Logf("statuses %v", got)
	if got[http.StatusOK] != 50 || got[http.StatusConflict] != 50 {
		t.Fatalf("100 buyers of 50: statuses %v, want 50x200 and 50x409", got)
	}
	rlCheckClean(t, f, 50, 50)
	if n := rlMasterKeys(t, f, 0, 1, 2); n != 0 {
		t.Fatalf("%d masters still hold the redlock key after every sale released", n)
	}
}

func TestScenarioRedlockOneOfThreeDownSellsTwoDownSellsNothing(t *testing.T) {
	t.Parallel()
	f := rlApp(t, 3, 2*time.Second, 20*time.Second)
	const stock = 100
	rlReset(t, f, stock)

	// Started now: an instance cannot start while a master is down (redis.embedded=never).
	short := rlShortWait(t, f, 300*time.Millisecond)
	f.Masters[0].Stop()
	got := rlBuyers(t, f, 60, rlWork)
	t.Logf("one master down: statuses %v", got)
	if got[http.StatusOK] != 60 {
		t.Fatalf("with one of three masters down: statuses %v, want 60x200", got)
	}
	rlCheckClean(t, f, stock, 60)

	f.Masters[1].Stop()
	var body handler.SaleBody
	start := time.Now()
	status, err := rlDo(short, http.MethodPost, "/inventory/sale?lock=redlock", &body)
	t.Logf("two down: one sale answered %d after %v: %s", status, time.Since(start), body.Error)
	if err != nil {
		t.Fatal(err)
	}
	// The answer says which mode's servers did not answer; their addresses go to the log only.
	if status != http.StatusServiceUnavailable || !strings.Contains(body.Error, "lock mode redlock needs did not answer") ||
		strings.Contains(body.Error, f.Masters[1].Addr) {
		t.Fatalf("with two of three down: status %d (%s), want 503 naming the mode whose masters did not answer, not their addresses", status, body.Error)
	}
	got = rlBuyers(t, short, 10, "")
	if got[http.StatusServiceUnavailable] != 10 {
		t.Fatalf("with two of three masters down: statuses %v, want 10x503", got)
	}
	rlCheckClean(t, f, stock, 60)
}

// rlWaitInside waits until a buyer of f's SKU is inside its read-check-write (it holds the
// lock): the event a rival or a fault must come after, on a machine of any speed.
func rlWaitInside(t *testing.T, f *apptest.Fixture) {
	t.Helper()
	inside := store.KeysFor(f.Cfg.Inventory.Key).InSection
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		n, err := f.RDB.ZCard(t.Context(), inside).Result()
		if err != nil {
			t.Fatalf("ZCARD %s: %v", inside, err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no buyer got inside within 10s")
		}
	}
}

func TestScenarioRedlockRenewalThenLostWhenMajorityGone(t *testing.T) {
	t.Parallel()
	// A renewal every lease/3 must survive the stalls of a busy 2-core machine running the
	// whole suite: a lease of 600 ms leaves 400 ms between two renewals.
	const lease = 600 * time.Millisecond
	f := rlApp(t, 3, lease, lease)
	rlReset(t, f, 10)

	// A business time of three leases: renewal keeps the lock, a rival waiting a lease fails.
	done := make(chan handler.SaleBody, 1)
	statusc := make(chan int, 1)
	go func() {
		var body handler.SaleBody
		status, err := rlDo(f, http.MethodPost, fmt.Sprintf("/inventory/sale?lock=redlock&workMs=%d", 3*lease.Milliseconds()), &body)
		if err != nil {
			t.Errorf("long sale: %v", err)
		}
		statusc <- status
		done <- body
	}()
	rlWaitInside(t, f) // the long sale holds the lock, whatever the machine's speed
	var rival handler.SaleBody
	if status, err := rlDo(f, http.MethodPost, "/inventory/sale?lock=redlock", &rival); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("rival during the long sale: status %d (%s), %v; want 503 (lock held)", status, rival.Error, err)
	}
	if status, body := <-statusc, <-done; status != http.StatusOK || !body.Sold || body.Renewals < 2 {
		t.Fatalf("sale with a business time of 3 leases: status %d, %+v; want sold with >= 2 renewals", status, body)
	} else {
		t.Logf("long sale: renewals %d, release error %q", body.Renewals, body.ReleaseError)
	}
	rlCheckClean(t, f, 10, 1)

	// Two masters die while a holder is inside: its renewal cannot reach a majority, Lost
	// closes and the holder does not write.
	var lost handler.SaleBody
	var status int
	var err error
	sold := make(chan struct{})
	go func() {
		defer close(sold)
		status, err = rlDo(f, http.MethodPost, fmt.Sprintf("/inventory/sale?lock=redlock&workMs=%d", 3*lease.Milliseconds()), &lost)
	}()
	rlWaitInside(t, f) // inside, with three leases of work ahead: now the majority goes
	f.Masters[0].Stop()
	f.Masters[1].Stop()
	<-sold
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusServiceUnavailable || lost.Sold || !strings.Contains(lost.Error, "lost") {
		t.Fatalf("holder whose masters died: status %d, %+v; want 503 'lock was lost', not sold", status, lost)
	}
	rlCheckClean(t, f, 10, 1)
}

func TestScenarioRedlockFiveMasters(t *testing.T) {
	t.Parallel()
	f := rlApp(t, 5, 2*time.Second, 20*time.Second)
	if len(f.App.Masters) != 5 {
		t.Fatalf("service has %d masters, want 5", len(f.App.Masters))
	}
	const stock = 40
	rlReset(t, f, stock)
	short := rlShortWait(t, f, 300*time.Millisecond)
	got := rlBuyers(t, f, 30, rlWork)
	if got[http.StatusOK] != 30 {
		t.Fatalf("five masters up: statuses %v, want 30x200", got)
	}
	// Two of five down: a quorum of three is left.
	f.Masters[0].Stop()
	f.Masters[3].Stop()
	got = rlBuyers(t, f, 30, rlWork)
	t.Logf("two of five down: statuses %v", got)
	if got[http.StatusOK] != 10 || got[http.StatusConflict] != 20 {
		t.Fatalf("two of five down: statuses %v, want 10x200 and 20x409", got)
	}
	rlCheckClean(t, f, stock, stock)
	if n := rlMasterKeys(t, f, 1, 2, 4); n != 0 {
		t.Fatalf("%d live masters still hold the redlock key", n)
	}
	// Three of five down: no quorum.
	f.Masters[4].Stop()
	if got := rlBuyers(t, short, 3, ""); got[http.StatusServiceUnavailable] != 3 {
		t.Fatalf("three of five down: statuses %v, want 3x503", got)
	}
}
