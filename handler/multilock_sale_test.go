package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/testredis"
	"seckill/store"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The multilock through the whole service: exact sales, and a master down.

// mlGet fetches url and decodes its JSON body into out (when out is not nil); the test's own
// goroutine only (it stops the test on an error).
func mlGet(t *testing.T, method, url string, out any) int {
	t.Helper()
	code, err := mlDo(t.Context(), method, url, out)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// mlDo is mlGet for any goroutine: it returns the error.
func mlDo(ctx context.Context, method, url string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, err
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer r.Body.Close()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: read: %w", method, url, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, fmt.Errorf("%s %s: %d %s: %w", method, url, r.StatusCode, raw, err)
		}
	}
	return r.StatusCode, nil
}

// mlBuyers resets the stock to stock and fires buyers concurrent sales with lock=mode.
func mlBuyers(t *testing.T, f *apptest.Fixture, mode string, stock, buyers int) (map[int]int, store.Inventory) {
	t.Helper()
	if code := mlGet(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock="+strconv.Itoa(stock), nil); code != http.StatusOK {
		t.Fatalf("reset: %d", code)
	}
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range buyers {
		wg.Go(func() {
			code, err := mlDo(t.Context(), http.MethodPost, f.HTTP.URL+"/inventory/sale?lock="+mode, nil)
			if err != nil {
				t.Errorf("buyer: %v", err)
				return
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	var inv store.Inventory
	if code := mlGet(t, http.MethodGet, f.HTTP.URL+"/inventory", &inv); code != http.StatusOK {
		t.Fatalf("inventory: %d", code)
	}
	return codes, inv
}

// TestReentrantAndMultilockSellExactlyTheStock: 100 concurrent buyers, stock 50, through the
// whole service: exactly 50 sold, 50 sold out, no lost update, nobody inside together.
func TestReentrantAndMultilockSellExactlyTheStock(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lock.Lease = 600 * time.Millisecond })
	const stock, buyers = 50, 100
	for _, mode := range []string{"reentrant", "multilock"} {
		t.Run(mode, func(t *testing.T) {
			start := time.Now()
			codes, inv := mlBuyers(t, f, mode, stock, buyers)
			if codes[http.StatusOK] != stock || codes[http.StatusConflict] != buyers-stock {
				t.Fatalf("statuses %v, want %d x 200 and %d x 409", codes, stock, buyers-stock)
			}
			if inv.Sold != stock || inv.Stock != 0 || inv.LostUpdates != 0 || inv.Oversold != 0 || inv.Overlaps != 0 {
				t.Fatalf("inventory %+v: want sold %d, stock 0, no lost update, no overlap", inv, stock)
			}
			t.Logf("%s: %d buyers in %s: %v", mode, buyers, time.Since(start), codes)
		})
	}
}

// TestMultilockSaleWithMasterDown: with one master stopped a multilock sale answers 503 within
// the wait and leaves nothing locked on the other masters; once it is back, selling resumes.
func TestMultilockSaleWithMasterDown(t *testing.T) {
	t.Parallel()
	const wait = 400 * time.Millisecond
	f := apptest.New(t, func(c *config.Config) { c.Lock.Wait = wait; c.Lock.Lease = time.Second })
	key := store.LockKey(f.Cfg.Inventory.Key, "multilock")
	var clients []*redis.Client
	for _, m := range f.Masters {
		clients = append(clients, testredis.Client(t, m))
	}
	f.Masters[2].Stop()
	start := time.Now()
	var body map[string]any
	code := mlGet(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=multilock", &body)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("sale with master 3 down: %d %v, want 503", code, body)
	}
	if d := time.Since(start); d > wait+time.Second {
		t.Fatalf("the failing sale took %s, the wait is %s", d, wait)
	}
	for i, c := range clients[:2] {
		if n, err := c.Exists(t.Context(), key).Result(); err != nil || n != 0 {
			t.Fatalf("%s left on master %d (%d, %v)", key, i+1, n, err)
		}
	}
	var inv store.Inventory
	mlGet(t, http.MethodGet, f.HTTP.URL+"/inventory", &inv)
	if inv.Sold != 0 {
		t.Fatalf("sold %d with a master down", inv.Sold)
	}
	if err := f.Masters[2].Restart(); err != nil {
		t.Fatal(err)
	}
	if code := mlGet(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=multilock", &body); code != http.StatusOK {
		t.Fatalf("sale after master 3 came back: %d %v", code, body)
	}
}
