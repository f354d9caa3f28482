package handler_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/modes"
	"seckill/internal/testredis"
	"seckill/service"
	"seckill/store"

	"github.com/seckill-lab/seckill/lock"
)

// lkGet fetches url and decodes a JSON answer into out (when not nil).
func lkGet(t *testing.T, url string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer r.Body.Close()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && r.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("GET %s: %s: %v", url, raw, err)
		}
	}
	return r.StatusCode, string(raw)
}

// TestGetMultiLockShowsRenewalsOnEveryMaster: held for 2 s with a 600 ms lease, so the
// watchdog renews every 200 ms; every master must show renewals and its TTL jumping back up,
// and nothing may be left locked afterwards.
func TestGetMultiLockShowsRenewalsOnEveryMaster(t *testing.T) {
	t.Parallel()
	// A renewal every 400 ms, each on three masters: under the race detector on a busy machine a
	// 600 ms lease once ran out before one was answered.
	const lease = 1200 * time.Millisecond
	f := apptest.New(t, func(c *config.Config) { c.Lock.Lease = lease })
	var res service.MultiLockHold
	code, raw := lkGet(t, f.HTTP.URL+"/getMultiLock?holdSeconds=3", &res)
	if code != http.StatusOK {
		t.Fatalf("GET /getMultiLock: %d %s", code, raw)
	}
	t.Logf("%s", raw)
	if res.HoldSeconds != 3 || res.HeldMs < 3000 || res.HeldMs > 4000 || !res.Released || res.Lost {
		t.Fatalf("hold: %s", raw)
	}
	if res.Key != store.LockKey(f.Cfg.Inventory.Key, "multilock") || res.LeaseMs != lease.Milliseconds() {
		t.Fatalf("key/lease: %s", raw)
	}
	if len(res.Masters) != len(f.Masters) {
		t.Fatalf("%d masters in the answer, %d configured", len(res.Masters), len(f.Masters))
	}
	// 3 s / 400 ms = ~7 renewals; demand a clear majority of them.
	for _, m := range res.Masters {
		if m.Renewals < 4 || m.TTLJumps < 3 {
			t.Fatalf("master %d (%s): %d renewals, %d TTL jumps; want the watchdog at work: %s",
				m.Master, m.Addr, m.Renewals, m.TTLJumps, raw)
		}
		if m.TTLAtAcquireMs <= 0 || m.TTLAtAcquireMs > lease.Milliseconds() {
			t.Fatalf("master %d TTL at acquire = %d", m.Master, m.TTLAtAcquireMs)
		}
		for _, s := range m.Samples {
			if s.TTLMs <= 0 || s.TTLMs > lease.Milliseconds() || s.Error != "" {
				t.Fatalf("master %d sample %+v: the lock was not held all along", m.Master, s)
			}
		}
	}
	for i, m := range f.Masters {
		n, err := testredis.Client(t, m).Exists(t.Context(), res.Key).Result()
		if err != nil || n != 0 {
			t.Fatalf("master %d after the hold: exists=%d err=%v", i+1, n, err)
		}
	}
}

func TestGetMultiLockRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lab.MaxWork = 5 * time.Second })
	for _, q := range []string{"holdSeconds=abc", "holdSeconds=-1", "holdSeconds=6", "holdSeconds=1.5", "hold=1"} {
		if code, raw := lkGet(t, f.HTTP.URL+"/getMultiLock?"+q, nil); code != http.StatusBadRequest {
			t.Fatalf("?%s: %d %s, want 400", q, code, raw)
		}
	}
	// The default (30 s) is bounded by lab.maxWork instead of refused.
	var res service.MultiLockHold
	if code, raw := lkGet(t, f.HTTP.URL+"/getMultiLock?holdSeconds=0", &res); code != http.StatusOK || !res.Released {
		t.Fatalf("?holdSeconds=0: %d %s", code, raw)
	}
}

// TestLocksShowsHolders: while a reentrant lock is held on the data Redis and the multilock on
// the masters, /locks names the holder field and its hold count on each, and nothing after.
func TestLocksShowsHolders(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lock.Lease = time.Second })
	sku := f.Cfg.Inventory.Key
	reg := f.App.Locks
	ctx, owner := t.Context(), lock.Options{Owner: "order-7"}
	rl, _, err := reg.Locker("reentrant")
	if err != nil {
		t.Fatal(err)
	}
	re, err := rl.Acquire(ctx, store.LockKey(sku, "reentrant"), owner)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := rl.Acquire(ctx, store.LockKey(sku, "reentrant"), owner)
	if err != nil {
		t.Fatal(err)
	}
	ml, _, err := reg.Locker("multilock")
	if err != nil {
		t.Fatal(err)
	}
	mle, err := ml.Acquire(ctx, store.LockKey(sku, "multilock"), owner)
	if err != nil {
		t.Fatal(err)
	}

	var v service.LocksView
	if code, raw := lkGet(t, f.HTTP.URL+"/locks", &v); code != http.StatusOK {
		t.Fatalf("GET /locks: %d %s", code, raw)
	}
	if v.SKU != sku || v.Prefix != store.KeysFor(sku).LockPrefix || v.InstanceID == "" {
		t.Fatalf("view header: %+v", v)
	}
	if len(v.Servers) != 1+len(f.Masters) {
		t.Fatalf("%d servers, want data + %d masters", len(v.Servers), len(f.Masters))
	}
	want := map[string]struct {
		key   string
		count int64
	}{"data": {store.LockKey(sku, "reentrant"), 2}}
	for i := range f.Masters {
		want[fmt.Sprintf("master%d", i+1)] = struct {
			key   string
			count int64
		}{store.LockKey(sku, "multilock"), 1}
	}
	for _, s := range v.Servers {
		w, ok := want[s.Name]
		if !ok || s.Error != "" || len(s.Keys) != 1 {
			t.Fatalf("server %+v, want one key %v", s, w)
		}
		k := s.Keys[0]
		if k.Key != w.key || k.Type != "hash" || k.PTTLMs <= 0 || len(k.Holders) != 1 {
			t.Fatalf("%s: key %+v, want %s held", s.Name, k, w.key)
		}
		h := k.Holders[0]
		if h.Owner != "order-7" || h.Instance != v.InstanceID || !h.ThisInstance || h.Count != w.count {
			t.Fatalf("%s: holder %+v, want order-7 of this instance with count %d", s.Name, h, w.count)
		}
	}

	for _, le := range []modes.Lease{nested, re, mle} {
		if err := le.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	v = service.LocksView{}
	lkGet(t, f.HTTP.URL+"/locks", &v)
	for _, s := range v.Servers {
		if len(s.Keys) != 0 {
			t.Fatalf("%s still shows %+v after the releases", s.Name, s.Keys)
		}
	}
	if code, _ := lkGet(t, f.HTTP.URL+"/locks?sku=nope", nil); code != http.StatusNotFound {
		t.Fatalf("unknown sku: %d, want 404", code)
	}
}

// TestLocksReportsADownMasterAndTheFence: a stopped master is reported in its entry while the
// others are still shown, and the fencing token is read from the data Redis.
func TestLocksReportsADownMasterAndTheFence(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	if err := f.RDB.Set(t.Context(), store.KeysFor(f.Cfg.Inventory.Key).Fence, 42, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f.Masters[1].Stop()
	var v service.LocksView
	if code, raw := lkGet(t, f.HTTP.URL+"/locks", &v); code != http.StatusOK {
		t.Fatalf("GET /locks with a master down: %d %s", code, raw)
	}
	if v.FenceToken != 42 || v.FenceError != "" {
		t.Fatalf("fence token %d (%s), want 42", v.FenceToken, v.FenceError)
	}
	for _, s := range v.Servers {
		if (s.Name == "master2") != (s.Error != "") {
			t.Fatalf("server %s error %q: only master2 is down", s.Name, s.Error)
		}
	}
}
