package handler_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/store"
)

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, method, url string, body io.Reader) resp {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	raw, _ := io.ReadAll(r.Body)
	out := resp{status: r.StatusCode, header: r.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func inventory(t *testing.T, f *apptest.Fixture) store.Inventory {
	t.Helper()
	r := do(t, http.MethodGet, f.HTTP.URL+"/inventory", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /inventory: %d %s", r.status, r.raw)
	}
	var inv store.Inventory
	if err := json.Unmarshal([]byte(r.raw), &inv); err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestSaleSellsOneAndReportsIt(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		r := do(t, method, f.HTTP.URL+"/inventory/sale", nil)
		if r.status != http.StatusOK || r.body["sold"] != true {
			t.Fatalf("%s sale: %d %s", method, r.status, r.raw)
		}
		for _, k := range []string{"sold", "remaining", "orderId", "instance", "lock", "waitMs", "message"} {
			if _, ok := r.body[k]; !ok {
				t.Fatalf("response lacks %q: %s", k, r.raw)
			}
		}
		if r.body["lock"] != "lua" || !strings.Contains(r.body["message"].(string), f.Cfg.Server.Instance) {
			t.Fatalf("unexpected body %s", r.raw)
		}
	}
	inv := inventory(t, f)
	if inv.Stock != 98 || inv.Sold != 2 || inv.InitialStock != 100 || inv.LostUpdates != 0 || inv.Oversold != 0 {
		t.Fatalf("inventory after two sales: %+v", inv)
	}
	if got, _ := f.RDB.Get(context.Background(), "inventory001").Result(); got != "98" {
		t.Fatalf("redis inventory001 = %q", got)
	}
}

func TestSoldOutIs409WithTheSameShape(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=1", nil); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.raw)
	}
	for _, mode := range []string{"lua", "atomic"} {
		do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=1", nil)
		if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock="+mode, nil); r.status != 200 {
			t.Fatalf("%s first sale: %d %s", mode, r.status, r.raw)
		}
		r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock="+mode, nil)
		if r.status != http.StatusConflict || r.body["sold"] != false || r.body["remaining"] != float64(0) || r.body["message"] == "" {
			t.Fatalf("%s sold out: %d %s", mode, r.status, r.raw)
		}
		if inv := inventory(t, f); inv.Sold != 1 || inv.Stock != 0 {
			t.Fatalf("%s: %+v", mode, inv)
		}
	}
}

func TestUnknownLockModeIs400AndListsModes(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	before := inventory(t, f)
	r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=spinlock", nil)
	if r.status != http.StatusBadRequest {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	modes, _ := r.body["validModes"].([]any)
	if len(modes) < 3 || !strings.Contains(r.raw, `"lua"`) || !strings.Contains(r.raw, "spinlock") {
		t.Fatalf("body does not list the valid modes: %s", r.raw)
	}
	if after := inventory(t, f); after.Stock != before.Stock || after.Sold != before.Sold {
		t.Fatalf("a bad request changed the inventory: %+v -> %+v", before, after)
	}
}

func TestLockNotObtainedIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lock.Wait = 200 * time.Millisecond })
	key := store.LockKey("inventory001", "lua")
	if err := f.RDB.Set(context.Background(), key, "someone-else", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=lua", nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond || waited > 3*time.Second {
		t.Fatalf("waited %s for a 200ms wait", waited)
	}
	// The stock was never read: no "remaining" (a 0 would read as sold out with 100 left).
	if _, ok := r.body["remaining"]; ok || r.body["status"] != float64(http.StatusServiceUnavailable) || r.body["error"] == "" {
		t.Fatalf("a sale that got no lock answered %s, want status and error and no remaining", r.raw)
	}
	if inv := inventory(t, f); inv.Sold != 0 || inv.Stock != 100 {
		t.Fatalf("%+v", inv)
	}
}

func TestRedisDownIs503AndReadyzSaysSo(t *testing.T) {
	t.Parallel()
	// A lock sale rides out the outage for its whole wait: a short one is enough to see the 503.
	f := apptest.New(t, func(c *config.Config) { c.Lock.Wait = 500 * time.Millisecond })
	if r := do(t, http.MethodGet, f.HTTP.URL+"/readyz", nil); r.status != http.StatusOK {
		t.Fatalf("readyz %d %s", r.status, r.raw)
	}
	f.Data.Stop()
	for _, mode := range []string{"lua", "atomic", "none"} {
		r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock="+mode, nil)
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s with redis down: %d %s", mode, r.status, r.raw)
		}
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/inventory", nil); r.status != http.StatusServiceUnavailable {
		t.Fatalf("inventory with redis down: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/readyz", nil); r.status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with redis down: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/healthz", nil); r.status != http.StatusOK {
		t.Fatalf("healthz: %d", r.status)
	}
	if strings.Contains(do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale", nil).raw, "127.0.0.1") {
		t.Log("note: error body names the address")
	}
	// Back up (empty): the service recovers without a restart. The sales above rode out the
	// outage for their whole wait, and go-redis's pool, after that many refused dials, answers
	// with the last one until its background dial (every second) gets through: /readyz says when.
	if err := f.Data.Restart(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r := do(t, http.MethodGet, f.HTTP.URL+"/readyz", nil); strings.Contains(r.raw, `"data":"ok"`) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("readyz 5 s after the restart: %d %s", r.status, r.raw)
		}
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=3", nil); r.status != http.StatusOK {
		t.Fatalf("reset after restart: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale", nil); r.status != http.StatusOK {
		t.Fatalf("sale after restart: %d %s", r.status, r.raw)
	}
}

func TestNonIntegerStockIs500NamingTheKeyAndWritesNothing(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	ctx := context.Background()
	if err := f.RDB.Set(ctx, "inventory001", "lots", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"lua", "atomic", "none"} {
		r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock="+mode, nil)
		if r.status != http.StatusInternalServerError || !strings.Contains(r.raw, "inventory001") {
			t.Fatalf("%s: %d %s", mode, r.status, r.raw)
		}
	}
	if v, _ := f.RDB.Get(ctx, "inventory001").Result(); v != "lots" {
		t.Fatalf("stock rewritten to %q", v)
	}
	if n, _ := f.RDB.LLen(ctx, store.KeysFor("inventory001").Orders).Result(); n != 0 {
		t.Fatalf("%d orders recorded", n)
	}
	if n, _ := f.RDB.Exists(ctx, store.LockKey("inventory001", "lua")).Result(); n != 0 {
		t.Fatal("the lua lock was left behind")
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale", nil)
	r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=42", nil)
	if r.status != 200 || r.body["stock"] != float64(42) || r.body["initialStock"] != float64(42) || r.body["sold"] != float64(0) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset", nil); r.body["stock"] != float64(100) {
		t.Fatalf("default reset: %s", r.raw)
	}
	for _, bad := range []string{"-1", "1000000001", "abc", "1.5", "", "99999999999999999999"} {
		r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock="+bad, nil)
		if r.status != http.StatusBadRequest || r.body["error"] == nil {
			t.Fatalf("stock=%q: %d %s", bad, r.status, r.raw)
		}
	}
	if inv := inventory(t, f); inv.Stock != 100 {
		t.Fatalf("a bad reset changed the stock: %+v", inv)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/inventory/reset", nil); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET reset: %d", r.status)
	}
}

// TestResetClearsTheFairQueue: a reset deletes the fair lock's queue and deadlines with the lock
// key, so no waiter left over from before holds up the new stock.
func TestResetClearsTheFairQueue(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	ctx := t.Context()
	l, _, err := f.App.Locks.Locker("fair")
	if err != nil {
		t.Fatal(err)
	}
	// The lock, its queue, the waiters' deadlines and the rest, as the library names them.
	keys := l.Keys("{inventory001}:lock:fair")
	if len(keys) < 3 {
		t.Fatalf("the fair lock's keys %v: want the lock, its queue and their deadlines at least", keys)
	}
	f.RDB.HSet(ctx, keys[0], "ghost:1", 1)
	for _, k := range keys[1:] {
		f.RDB.RPush(ctx, k, "ghost:2")
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=5", nil); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.raw)
	}
	if n := f.RDB.Exists(ctx, keys...).Val(); n != 0 {
		t.Fatalf("%d of the fair lock's keys left after the reset", n)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=fair", nil); r.status != 200 || r.body["sold"] != true {
		t.Fatalf("sale with lock=fair after the reset: %d %s", r.status, r.raw)
	}
}

func TestAdminTokenGuardsReset(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Server.AdminToken = "t0ken" })
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=5", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("without token: %d", r.status)
	}
	req, _ := http.NewRequest(http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=5", nil)
	req.Header.Set("X-Admin-Token", "t0ken")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("with token: %d", res.StatusCode)
	}
}

func TestSwaggerUIAndHealth(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	if r := do(t, http.MethodGet, f.HTTP.URL+"/swagger/index.html", nil); r.status != 200 || !strings.Contains(r.raw, "swagger") {
		t.Fatalf("swagger ui: %d", r.status)
	}
	r := do(t, http.MethodGet, f.HTTP.URL+"/swagger/doc.json", nil)
	if r.status != 200 || !strings.Contains(r.raw, "/inventory/sale") {
		t.Fatalf("swagger doc: %d", r.status)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/healthz", nil); r.status != 200 {
		t.Fatalf("healthz %d", r.status)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/nope", nil); r.status != 404 || r.body["error"] == nil {
		t.Fatalf("404: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodDelete, f.HTTP.URL+"/inventory/sale", nil); r.status != 405 {
		t.Fatalf("DELETE sale: %d", r.status)
	}
}

func TestSeveralSKUs(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Inventory.SKUs = []string{"inventory001", "inventory002"} })
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?sku=inventory002&stock=3", nil); r.status != 200 {
		t.Fatalf("reset inventory002: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?sku=inventory002&lock=atomic", nil); r.status != 200 {
		t.Fatalf("sale inventory002: %d %s", r.status, r.raw)
	}
	if v, _ := f.RDB.Get(context.Background(), "inventory002").Result(); v != "2" {
		t.Fatalf("inventory002 = %q", v)
	}
	r := do(t, http.MethodGet, f.HTTP.URL+"/inventory", nil)
	skus, _ := r.body["skus"].([]any)
	if r.status != 200 || r.body["sku"] != "inventory001" || len(skus) != 2 {
		t.Fatalf("listing: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+"/inventory?sku=inventory002", nil); r.body["sold"] != float64(1) || r.body["skus"] != nil {
		t.Fatalf("one sku: %s", r.raw)
	}
	for _, path := range []string{"/inventory?sku=nope", "/inventory/sale?sku=nope", "/inventory/reset?sku=nope"} {
		method := http.MethodPost
		if path == "/inventory?sku=nope" {
			method = http.MethodGet
		}
		if r := do(t, method, f.HTTP.URL+path, nil); r.status != http.StatusNotFound {
			t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
	}
	if n, _ := f.RDB.Exists(context.Background(), "nope").Result(); n != 0 {
		t.Fatal("an unknown sku was written")
	}
}
