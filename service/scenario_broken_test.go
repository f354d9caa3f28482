package service_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"seckill/config"
	"seckill/handler"
	"seckill/internal/apptest"
	"seckill/store"
)

// The scenarios of docs/lab.md rows 2-5 and 10, driven through the HTTP API of a whole service
// on real Redis servers: each broken mode must show its anomaly, fenced must show none.

// scenarioApp starts a service with the given lease and lock wait.
func scenarioApp(t *testing.T, lease, wait time.Duration) *apptest.Fixture {
	t.Helper()
	return apptest.New(t, func(c *config.Config) {
		c.Lock.Lease = lease
		c.Lock.Wait = wait
	})
}

// scenarioSale sends one sale with the query string q and decodes the answer.
func scenarioSale(t *testing.T, f *apptest.Fixture, q string) (int, handler.SaleBody) {
	t.Helper()
	var body handler.SaleBody
	status, err := scenarioDo(f, http.MethodPost, "/inventory/sale?"+q, &body)
	if err != nil {
		t.Errorf("sale %s: %v", q, err)
	}
	return status, body
}

// scenarioDo may run in goroutines, so it reports errors instead of failing the test itself.
func scenarioDo(f *apptest.Fixture, method, path string, out any) (int, error) {
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

func scenarioInventory(t *testing.T, f *apptest.Fixture) store.Inventory {
	t.Helper()
	var inv store.Inventory
	status, err := scenarioDo(f, http.MethodGet, "/inventory", &inv)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /inventory: status %d, %v", status, err)
	}
	return inv
}

func scenarioReset(t *testing.T, f *apptest.Fixture, stock int64) {
	t.Helper()
	var inv store.Inventory
	status, err := scenarioDo(f, http.MethodPost, fmt.Sprintf("/inventory/reset?stock=%d", stock), &inv)
	if err != nil || status != http.StatusOK || inv.Stock != stock {
		t.Fatalf("reset to %d: status %d, stock %d, %v", stock, status, inv.Stock, err)
	}
}

// scenarioLockKey is the data Redis lock key of mode for the fixture's SKU.
func scenarioLockKey(f *apptest.Fixture, mode string) string {
	return store.LockKey(f.Cfg.Inventory.Key, mode)
}

// scenarioAwaitKey waits until the lock key of mode exists, i.e. a holder has acquired.
func scenarioAwaitKey(t *testing.T, f *apptest.Fixture, mode string) {
	t.Helper()
	key := scenarioLockKey(f, mode)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, err := f.RDB.Exists(t.Context(), key).Result()
		if err != nil {
			t.Fatalf("EXISTS %s: %v", key, err)
		}
		if n == 1 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s never appeared: the first holder did not acquire", key)
}

func scenarioPTTL(t *testing.T, f *apptest.Fixture, mode string) int64 {
	t.Helper()
	n, err := f.RDB.Do(t.Context(), "pttl", scenarioLockKey(f, mode)).Int64()
	if err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	return n
}

// Row 2: a holder that crashes after SETNX leaves a key with no TTL; every later sale times out.
func TestScenarioSetnxCrashDeadlocks(t *testing.T) {
	t.Parallel()
	const lease, wait = 300 * time.Millisecond, 300 * time.Millisecond
	f := scenarioApp(t, lease, wait)
	scenarioReset(t, f, 10)

	if status, body := scenarioSale(t, f, "lock=setnx&crash=after-lock"); status != http.StatusInternalServerError {
		t.Fatalf("crash=after-lock: status %d (%s), want 500", status, body.Error)
	}
	if got := scenarioPTTL(t, f, "setnx"); got != -1 {
		t.Fatalf("PTTL of the setnx key = %d, want -1 (no TTL)", got)
	}
	time.Sleep(lease + lease/2)
	for i := range 2 {
		if status, body := scenarioSale(t, f, "lock=setnx"); status != http.StatusServiceUnavailable {
			t.Fatalf("sale %d after the crash: status %d (%s), want 503 (deadlock)", i, status, body.Message)
		}
	}
	if inv := scenarioInventory(t, f); inv.Sold != 0 || inv.Stock != 10 {
		t.Fatalf("sold %d, stock %d after the deadlock; want nothing sold", inv.Sold, inv.Stock)
	}
	// Only deleting the key by hand (a reset) ends it.
	scenarioReset(t, f, 10)
	if status, body := scenarioSale(t, f, "lock=setnx"); status != http.StatusOK || !body.Sold {
		t.Fatalf("sale after reset: status %d (%s), want 200", status, body.Message)
	}
}

// Row 3: a holder that dies between SETNX and EXPIRE leaves a key with no TTL.
func TestScenarioSetnxExpireCrashBeforeExpireDeadlocks(t *testing.T) {
	t.Parallel()
	const lease, wait = 300 * time.Millisecond, 300 * time.Millisecond
	f := scenarioApp(t, lease, wait)
	scenarioReset(t, f, 10)

	if status, body := scenarioSale(t, f, "lock=setnx&crash=before-expire"); status != http.StatusBadRequest {
		t.Fatalf("crash=before-expire on setnx: status %d (%s), want 400", status, body.Error)
	}
	if status, body := scenarioSale(t, f, "lock=setnx-expire&crash=before-expire"); status != http.StatusInternalServerError {
		t.Fatalf("crash=before-expire: status %d (%s), want 500", status, body.Error)
	}
	if got := scenarioPTTL(t, f, "setnx-expire"); got != -1 {
		t.Fatalf("PTTL of the setnx-expire key = %d, want -1 (no TTL)", got)
	}
	time.Sleep(lease + lease/2)
	if status, body := scenarioSale(t, f, "lock=setnx-expire"); status != http.StatusServiceUnavailable {
		t.Fatalf("sale after the crash: status %d (%s), want 503 (deadlock)", status, body.Message)
	}
	if inv := scenarioInventory(t, f); inv.Sold != 0 {
		t.Fatalf("sold %d after the deadlock, want 0", inv.Sold)
	}
}

// Row 4: business time longer than the lease; the lock expires, the next buyer acquires, and the
// first buyer's blind DEL removes the next buyer's lock.
func TestScenarioSetnxExForeignUnlockOverlapLostUpdate(t *testing.T) {
	t.Parallel()
	// work = 1.5 leases: A's DEL lands half a lease after B acquired, while B's key is alive.
	const lease, work, buyers = 200 * time.Millisecond, 300 * time.Millisecond, 4
	f := scenarioApp(t, lease, 5*time.Second)
	scenarioReset(t, f, 100)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		foreign int
	)
	for i := range buyers {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 30 * time.Millisecond) // staggered arrivals
			status, body := scenarioSale(t, f, fmt.Sprintf("lock=setnx-ex&workMs=%d", work.Milliseconds()))
			if status != http.StatusOK {
				t.Errorf("buyer %d: status %d (%s)", i, status, body.Message)
			}
			if body.ForeignUnlock {
				mu.Lock()
				foreign++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	inv := scenarioInventory(t, f)
	t.Logf("setnx-ex: sold %d, stock %d, lostUpdates %d, foreignUnlocks %d, overlaps %d",
		inv.Sold, inv.Stock, inv.LostUpdates, inv.ForeignUnlocks, inv.Overlaps)
	if inv.ForeignUnlocks == 0 || foreign == 0 {
		t.Errorf("foreignUnlocks = %d (%d in responses), want > 0", inv.ForeignUnlocks, foreign)
	}
	if inv.ForeignUnlocks != int64(foreign) {
		t.Errorf("foreignUnlocks = %d, but %d responses reported one", inv.ForeignUnlocks, foreign)
	}
	if inv.Overlaps == 0 {
		t.Error("overlaps = 0, want > 0")
	}
	if inv.LostUpdates == 0 {
		t.Error("lostUpdates = 0, want > 0")
	}
	if inv.Sold != buyers {
		t.Errorf("sold = %d, want %d", inv.Sold, buyers)
	}
}

// Row 5: A's release pauses between its value check and its DEL while the lock expires and B
// acquires; A's DEL removes B's lock.
func TestScenarioUUIDPauseBeforeDelForeignUnlock(t *testing.T) {
	t.Parallel()
	// A: work 100ms, check at ~100ms (still A's), DEL at ~100+400ms. B acquires when A's key
	// expires at ~300ms and works 400ms, so its key is alive when A's DEL lands.
	const lease = 300 * time.Millisecond
	f := scenarioApp(t, lease, 5*time.Second)
	scenarioReset(t, f, 10)

	type answer struct {
		status int
		body   handler.SaleBody
	}
	aDone := make(chan answer, 1)
	go func() {
		status, body := scenarioSale(t, f, "lock=uuid&workMs=100&pauseBeforeDelMs=400")
		aDone <- answer{status, body}
	}()
	scenarioAwaitKey(t, f, "uuid")
	bStatus, bBody := scenarioSale(t, f, "lock=uuid&workMs=400")
	a := <-aDone

	if a.status != http.StatusOK || !a.body.Sold {
		t.Fatalf("A: status %d (%s), want 200", a.status, a.body.Message)
	}
	if !a.body.ForeignUnlock {
		t.Errorf("A's release did not report a foreign unlock (releaseError %q)", a.body.ReleaseError)
	}
	if bStatus != http.StatusOK || !bBody.Sold {
		t.Fatalf("B: status %d (%s), want 200", bStatus, bBody.Message)
	}
	if bBody.ReleaseError == "" {
		t.Error("B released its lock normally: A's DEL did not remove it")
	}
	inv := scenarioInventory(t, f)
	t.Logf("uuid: sold %d, foreignUnlocks %d, overlaps %d, B's release: %s",
		inv.Sold, inv.ForeignUnlocks, inv.Overlaps, bBody.ReleaseError)
	if inv.ForeignUnlocks != 1 {
		t.Errorf("foreignUnlocks = %d, want 1", inv.ForeignUnlocks)
	}
	if inv.LostUpdates != 0 {
		t.Errorf("lostUpdates = %d, want 0 (A wrote before B read)", inv.LostUpdates)
	}
}

// Row 10: A is frozen (with its watchdog) past its lease while B acquires and writes; A's write
// carries the older token and is rejected.
func TestScenarioFencedRejectsFrozenHoldersStaleWrite(t *testing.T) {
	t.Parallel()
	forEachFencedLayout(t, testScenarioFencedRejectsFrozenHoldersStaleWrite)
}

// forEachFencedLayout runs test on both of mode fenced's layouts (lock.fencedLayout).
func forEachFencedLayout(t *testing.T, test func(t *testing.T, layout string)) {
	for _, layout := range []string{"line", "redisson"} {
		t.Run(layout, func(t *testing.T) { test(t, layout) })
	}
}

// fencedApp is scenarioApp with mode fenced in the given layout.
func fencedApp(t *testing.T, layout string, lease, wait time.Duration) *apptest.Fixture {
	t.Helper()
	return apptest.New(t, func(c *config.Config) {
		c.Lock.Lease = lease
		c.Lock.Wait = wait
		c.Lock.FencedLayout = layout
	})
}

func testScenarioFencedRejectsFrozenHoldersStaleWrite(t *testing.T, layout string) {
	const lease = 300 * time.Millisecond
	f := fencedApp(t, layout, lease, 5*time.Second)
	scenarioReset(t, f, 10)

	type answer struct {
		status int
		body   handler.SaleBody
	}
	aDone := make(chan answer, 1)
	go func() {
		status, body := scenarioSale(t, f, fmt.Sprintf("lock=fenced&freezeMs=%d", (3*lease).Milliseconds()))
		aDone <- answer{status, body}
	}()
	scenarioAwaitKey(t, f, "fenced")
	bStatus, bBody := scenarioSale(t, f, "lock=fenced")
	a := <-aDone

	if bStatus != http.StatusOK || !bBody.Sold {
		t.Fatalf("B: status %d (%s), want 200", bStatus, bBody.Message)
	}
	if a.status != http.StatusConflict || !a.body.StaleWrite || a.body.Sold {
		t.Fatalf("A: status %d, staleWrite %v, sold %v (%s); want 409 with staleWrite",
			a.status, a.body.StaleWrite, a.body.Sold, a.body.Message)
	}
	if a.body.Token <= 0 || bBody.Token <= a.body.Token {
		t.Errorf("tokens: A %d, B %d; want 0 < A < B", a.body.Token, bBody.Token)
	}
	inv := scenarioInventory(t, f)
	t.Logf("fenced: sold %d, stock %d, lostUpdates %d, staleWritesRejected %d, overlaps %d, tokens A %d B %d",
		inv.Sold, inv.Stock, inv.LostUpdates, inv.StaleRejected, inv.Overlaps, a.body.Token, bBody.Token)
	if inv.LostUpdates != 0 || inv.StaleRejected != 1 || inv.Sold != 1 || inv.Stock != 9 {
		t.Errorf("lostUpdates %d, staleWritesRejected %d, sold %d, stock %d; want 0, 1, 1, 9",
			inv.LostUpdates, inv.StaleRejected, inv.Sold, inv.Stock)
	}
}

// Row 10 under load: 100 buyers for 50 items sell exactly 50, with no lost update and no overlap.
// The reset then deletes the layout's token counter together with the store's record of the
// newest token, so the tokens start again from 1 and are accepted.
func TestScenarioFencedHundredBuyers(t *testing.T) {
	t.Parallel()
	forEachFencedLayout(t, testScenarioFencedHundredBuyers)
}

func testScenarioFencedHundredBuyers(t *testing.T, layout string) {
	const buyers, stock = 100, 50
	f := fencedApp(t, layout, time.Second, 30*time.Second)
	scenarioReset(t, f, stock)

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		tokens   = map[int64]bool{}
	)
	for range buyers {
		wg.Go(func() {
			status, body := scenarioSale(t, f, "lock=fenced")
			mu.Lock()
			defer mu.Unlock()
			statuses[status]++
			if body.Sold {
				if tokens[body.Token] {
					t.Errorf("token %d handed out twice", body.Token)
				}
				tokens[body.Token] = true
			}
		})
	}
	wg.Wait()
	inv := scenarioInventory(t, f)
	t.Logf("fenced x%d: statuses %v, sold %d, stock %d, lostUpdates %d, overlaps %d, stale %d",
		buyers, statuses, inv.Sold, inv.Stock, inv.LostUpdates, inv.Overlaps, inv.StaleRejected)
	if statuses[http.StatusOK] != stock || statuses[http.StatusConflict] != buyers-stock {
		t.Errorf("statuses %v, want %d x 200 and %d x 409 (sold out)", statuses, stock, buyers-stock)
	}
	if inv.Sold != stock || inv.Stock != 0 || inv.LostUpdates != 0 || inv.Oversold != 0 ||
		inv.Overlaps != 0 || inv.StaleRejected != 0 {
		t.Errorf("sold %d, stock %d, lostUpdates %d, oversold %d, overlaps %d, stale %d; want %d, 0, 0, 0, 0, 0",
			inv.Sold, inv.Stock, inv.LostUpdates, inv.Oversold, inv.Overlaps, inv.StaleRejected, stock)
	}

	ctx := t.Context()
	lockKey := scenarioLockKey(f, "fenced")
	// The token counter is the string among the keys the library names beside the lock.
	l, _, err := f.App.Locks.Locker("fenced")
	if err != nil {
		t.Fatal(err)
	}
	var counter string
	for _, k := range l.Keys(lockKey)[1:] {
		if f.RDB.Type(ctx, k).Val() == "string" {
			counter = k
		}
	}
	fence := store.KeysFor(f.Cfg.Inventory.Key).Fence
	if n, err := f.RDB.Get(ctx, counter).Int64(); err != nil || n < stock {
		t.Fatalf("%s = %d (%v), want the counter of %d sales at least", counter, n, err, stock)
	}
	scenarioReset(t, f, 1)
	if n := f.RDB.Exists(ctx, counter, fence).Val(); n != 0 {
		t.Fatalf("%d of %s and %s left after the reset, want both gone", n, counter, fence)
	}
	status, body := scenarioSale(t, f, "lock=fenced")
	if status != http.StatusOK || body.Token != 1 {
		t.Fatalf("the first sale after the reset: status %d, token %d (%s); want 200 with token 1", status, body.Token, body.Message)
	}
}
