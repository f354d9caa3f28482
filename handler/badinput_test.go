package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/testredis"
	"seckill/lab"
)

// badRequest is one malformed request and what the answer must say.
type badRequest struct {
	name    string
	method  string
	target  string // path and query
	body    []byte
	chunked bool // send body without a Content-Length
	status  int
	want    []string // substrings the JSON error must contain (case-insensitive)
}

// redisState is every key of every Redis the service uses: server/key -> type, the value as
// read by the type's own command, and whether it has a TTL (the TTL itself shrinks, so only its
// presence is compared). Plain reads rather than DUMP, so the in-process Redis can take it too.
type redisState map[string]string

// keyValue reads the whole value of key k of type typ, in a form that compares equal only when
// the value is the same.
func keyValue(ctx context.Context, c *redis.Client, typ, k string) (string, error) {
	switch typ {
	case "string":
		v, err := c.Get(ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			return "(expired while read)", nil
		}
		return v, err
	case "hash":
		m, err := c.HGetAll(ctx, k).Result()
		return fmt.Sprint(m), err // fmt prints maps with sorted keys
	case "list":
		l, err := c.LRange(ctx, k, 0, -1).Result()
		return fmt.Sprint(l), err
	case "set":
		m, err := c.SMembers(ctx, k).Result()
		sort.Strings(m)
		return fmt.Sprint(m), err
	case "zset":
		z, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
		return fmt.Sprint(z), err
	case "stream":
		x, err := c.XRange(ctx, k, "-", "+").Result()
		return fmt.Sprint(x), err
	default:
		return "", fmt.Errorf("key %s has type %q, which the snapshot cannot read", k, typ)
	}
}

func snapshotRedis(t *testing.T, servers map[string]*redis.Client) redisState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := redisState{}
	for name, c := range servers {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, "*", 100).Result()
			if err != nil {
				t.Fatalf("scan %s: %v", name, err)
			}
			for _, k := range keys {
				typ, err := c.Type(ctx, k).Result()
				if err != nil {
					t.Fatalf("type %s/%s: %v", name, k, err)
				}
				if typ == "none" {
					continue // deleted since the scan saw it (a checkout permit given back): absent
				}
				val, err := keyValue(ctx, c, typ, k)
				if err != nil {
					t.Fatalf("read %s/%s: %v", name, k, err)
				}
				pttl, err := c.PTTL(ctx, k).Result()
				if err != nil {
					t.Fatalf("pttl %s/%s: %v", name, k, err)
				}
				st[name+"/"+k] = fmt.Sprintf("%s %q ttl=%t", typ, val, pttl > 0)
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return st
}

// diff lists what changed between two snapshots.
func (before redisState) diff(after redisState) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, "deleted "+k)
		} else if w != v {
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	sort.Strings(out)
	return out
}

// redisServers names a client on the data Redis and on every master of f.
func redisServers(t *testing.T, f *apptest.Fixture) map[string]*redis.Client {
	servers := map[string]*redis.Client{"data": f.RDB}
	for i, m := range f.Masters {
		servers[fmt.Sprintf("master%d", i+1)] = testredis.Client(t, m)
	}
	return servers
}

// checkoutSettled waits until no sale holds a checkout permit: a sale gives its permit back
// beside its answer, so a snapshot taken just after a sale could see the release land.
func checkoutSettled(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		held, err := rdb.Keys(ctx, "*:checkout:*:timeout").Result()
		if err == nil && len(held) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkout permits still held 5 s after the sales: %v (%v)", held, err)
		}
	}
}

// seed gives every server keys of several types, with and without a TTL, so that the snapshot
// has something to notice: stock, orders and counters from real sales, a fencing token, and
// marker keys on the masters (which hold nothing between sales).
func seed(t *testing.T, f *apptest.Fixture, servers map[string]*redis.Client) {
	t.Helper()
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=50", nil); r.status != http.StatusOK {
		t.Fatalf("reset: %d %s", r.status, r.raw)
	}
	for _, mode := range []string{"lua", "fenced", "reentrant", "redlock", "atomic"} {
		if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock="+mode, nil); r.status != http.StatusOK {
			t.Fatalf("seed sale %s: %d %s", mode, r.status, r.raw)
		}
	}
	checkoutSettled(t, f.RDB)
	ctx := context.Background()
	for name, c := range servers {
		if err := c.Set(ctx, "badinput:marker", name, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "badinput:expiring", name, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, "badinput:hash", "f", name).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func send(t *testing.T, c badRequest, base string) resp {
	t.Helper()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
		if c.chunked {
			// A reader of unknown length: the client sends it chunked, without Content-Length.
			body = io.MultiReader(bytes.NewReader(c.body))
		}
	}
	return do(t, c.method, base+c.target, body)
}

// checkRefused asserts the answer: the expected 4xx, JSON, an error naming the problem.
func checkRefused(t *testing.T, c badRequest, r resp) {
	t.Helper()
	if r.status != c.status || r.status < 400 || r.status > 499 {
		t.Fatalf("%s %s: status %d, want %d; body %.300s", c.method, c.target, r.status, c.status, r.raw)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, want JSON; body %.300s", c.method, c.target, ct, r.raw)
	}
	msg, _ := r.body["error"].(string)
	if msg == "" {
		t.Fatalf("%s %s: no \"error\" in the JSON answer: %.300s", c.method, c.target, r.raw)
	}
	for _, w := range c.want {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Fatalf("%s %s: error %q does not name the problem (want %q)", c.method, c.target, msg, w)
		}
	}
}

func runBadInputTable(t *testing.T, f *apptest.Fixture, cases []badRequest) {
	servers := redisServers(t, f)
	seed(t, f, servers)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshotRedis(t, servers)
			r := send(t, c, f.HTTP.URL)
			checkRefused(t, c, r)
			if d := before.diff(snapshotRedis(t, servers)); len(d) > 0 {
				t.Fatalf("%s %s answered %d but changed Redis: %s", c.method, c.target, r.status, strings.Join(d, ", "))
			}
		})
	}
}

// TestBadInputIsRefusedAndChangesNothing sends malformed requests to every endpoint and
// parameter: each must get its 4xx with a JSON error that names the problem, and leave every key
// of the data Redis and of every master as it was.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) {
		c.Lab.MaxWork, c.Lab.MaxFreeze, c.Lab.MaxPause, c.Lab.MaxLease = 5*time.Second, 5*time.Second, 5*time.Second, 5*time.Second
	})
	scenario := lab.Scenarios()[0].Name
	huge := "99999999999999999999" // beyond int64
	big := bytes.Repeat([]byte("x"), 2<<20)
	P, G := http.MethodPost, http.MethodGet
	const (
		s400 = http.StatusBadRequest
		s404 = http.StatusNotFound
		s405 = http.StatusMethodNotAllowed
		s413 = http.StatusRequestEntityTooLarge
	)
	cases := []badRequest{
		// /inventory/sale: syntax
		{name: "sale unknown mode", method: P, target: "/inventory/sale?lock=nope", status: s400, want: []string{"unknown mode", `"nope"`}},
		{name: "sale unknown mode GET", method: G, target: "/inventory/sale?lock=nope", status: s400, want: []string{"unknown mode"}},
		{name: "sale empty mode", method: P, target: "/inventory/sale?lock=", status: s400, want: []string{"lock= is empty"}},
		{name: "sale workMs not a number", method: P, target: "/inventory/sale?workMs=abc", status: s400, want: []string{`workMs="abc"`, "whole number"}},
		{name: "sale workMs fraction", method: P, target: "/inventory/sale?workMs=1.5", status: s400, want: []string{"workMs", "whole number"}},
		{name: "sale workMs hex", method: P, target: "/inventory/sale?workMs=0x10", status: s400, want: []string{"workMs", "whole number"}},
		{name: "sale workMs negative", method: P, target: "/inventory/sale?workMs=-5", status: s400, want: []string{"workMs", "negative"}},
		{name: "sale workMs beyond int64", method: P, target: "/inventory/sale?workMs=" + huge, status: s400, want: []string{"workMs", "too large", "the limit is"}},
		{name: "sale workMs beyond a day", method: P, target: "/inventory/sale?workMs=86400001", status: s400, want: []string{"workMs", "too large"}},
		{name: "sale workMs 10k digits", method: P, target: "/inventory/sale?workMs=" + strings.Repeat("9", 10000), status: s400, want: []string{"workMs", "too large", "the limit is"}},
		{name: "sale workMs above lab.maxWork", method: P, target: "/inventory/sale?lock=lua&workMs=5001", status: s400, want: []string{"workMs", "maximum of 5000 ms"}},
		{name: "sale freezeMs not a number", method: P, target: "/inventory/sale?lock=fenced&freezeMs=soon", status: s400, want: []string{"freezeMs", "whole number"}},
		{name: "sale freezeMs above lab.maxFreeze", method: P, target: "/inventory/sale?lock=fenced&freezeMs=5001", status: s400, want: []string{"freezeMs", "maximum"}},
		{name: "sale leaseMs above lab.maxLease", method: P, target: "/inventory/sale?lock=reentrant&leaseMs=5001", status: s400, want: []string{"leaseMs", "maximum"}},
		{name: "sale leaseMs on a mode without a watchdog", method: P, target: "/inventory/sale?lock=lua&leaseMs=100", status: s400, want: []string{"leaseMs", "does not apply", "reentrant"}},
		{name: "sale leaseMs negative", method: P, target: "/inventory/sale?lock=reentrant&leaseMs=-1", status: s400, want: []string{"leaseMs"}},
		{name: "sale pauseBeforeDelMs negative", method: P, target: "/inventory/sale?lock=uuid&pauseBeforeDelMs=-1", status: s400, want: []string{"pauseBeforeDelMs", "negative"}},
		{name: "sale pauseBeforeDelMs above lab.maxPause", method: P, target: "/inventory/sale?lock=uuid&pauseBeforeDelMs=5001", status: s400, want: []string{"pauseBeforeDelMs", "maximum"}},
		{name: "sale unknown fault", method: P, target: "/inventory/sale?crash=sometimes", status: s400, want: []string{`crash="sometimes"`, "not a fault"}},
		{name: "sale unknown parameter", method: P, target: "/inventory/sale?colour=red", status: s400, want: []string{"unknown parameter", "colour"}},
		{name: "sale parameter twice", method: P, target: "/inventory/sale?workMs=1&workMs=2", status: s400, want: []string{"workMs", "2 times"}},
		{name: "sale unknown sku", method: P, target: "/inventory/sale?sku=nope", status: s404, want: []string{"unknown sku", "nope"}},
		// /inventory/sale: a fault with the wrong mode
		{name: "sale pause with lua", method: P, target: "/inventory/sale?lock=lua&pauseBeforeDelMs=10", status: s400, want: []string{"pauseBeforeDelMs", "does not apply to lock mode lua", "uuid"}},
		{name: "sale work with atomic", method: P, target: "/inventory/sale?lock=atomic&workMs=10", status: s400, want: []string{"workMs", "does not apply to lock mode atomic"}},
		{name: "sale freeze with none", method: P, target: "/inventory/sale?lock=none&freezeMs=10", status: s400, want: []string{"freezeMs", "does not apply to lock mode none"}},
		{name: "sale crash before-expire with reentrant", method: P, target: "/inventory/sale?lock=reentrant&crash=before-expire", status: s400, want: []string{"crash=before-expire", "does not apply", "setnx-expire"}},
		{name: "sale crash after-lock with atomic", method: P, target: "/inventory/sale?lock=atomic&crash=after-lock", status: s400, want: []string{"crash=after-lock", "does not apply"}},
		{name: "sale pause with redlock", method: P, target: "/inventory/sale?lock=redlock&pauseBeforeDelMs=5", status: s400, want: []string{"pauseBeforeDelMs", "does not apply to lock mode redlock"}},
		// /inventory/sale: methods and bodies
		{name: "sale PUT", method: http.MethodPut, target: "/inventory/sale", status: s405, want: []string{"method PUT is not allowed", "/inventory/sale"}},
		{name: "sale DELETE", method: http.MethodDelete, target: "/inventory/sale", status: s405, want: []string{"DELETE"}},
		{name: "sale PATCH", method: http.MethodPatch, target: "/inventory/sale", status: s405, want: []string{"PATCH"}},
		{name: "sale oversized body", method: P, target: "/inventory/sale", body: big, status: s413, want: []string{"too large"}},
		{name: "sale oversized chunked body", method: P, target: "/inventory/sale", body: big, chunked: true, status: http.StatusLengthRequired, want: []string{"Content-Length"}},
		{name: "sale small chunked body", method: P, target: "/inventory/sale", body: []byte(`{"lock":"none"}`), chunked: true, status: http.StatusLengthRequired, want: []string{"chunked"}},
		// /inventory
		{name: "inventory unknown sku", method: G, target: "/inventory?sku=nope", status: s404, want: []string{"unknown sku"}},
		{name: "inventory POST", method: P, target: "/inventory", status: s405, want: []string{"method POST"}},
		// /inventory/reset
		{name: "reset stock not a number", method: P, target: "/inventory/reset?stock=lots", status: s400, want: []string{`stock="lots"`, "whole number"}},
		{name: "reset stock fraction", method: P, target: "/inventory/reset?stock=1.5", status: s400, want: []string{"stock", "whole number"}},
		{name: "reset stock negative", method: P, target: "/inventory/reset?stock=-1", status: s400, want: []string{"stock=-1", "out of range"}},
		{name: "reset stock above the maximum", method: P, target: "/inventory/reset?stock=1000000001", status: s400, want: []string{"stock=1000000001", "out of range"}},
		{name: "reset stock beyond int64", method: P, target: "/inventory/reset?stock=" + huge, status: s400, want: []string{"stock", "too large", "the limit is"}},
		{name: "reset stock empty", method: P, target: "/inventory/reset?stock=", status: s400, want: []string{`stock=""`, "whole number"}},
		{name: "reset stock twice", method: P, target: "/inventory/reset?stock=1&stock=2", status: s400, want: []string{"stock", "2 times"}},
		{name: "reset unknown sku", method: P, target: "/inventory/reset?stock=5&sku=nope", status: s404, want: []string{"unknown sku"}},
		{name: "reset unknown parameter", method: P, target: "/inventory/reset?stok=5", status: s400, want: []string{"unknown parameter stok"}},
		{name: "reset GET", method: G, target: "/inventory/reset?stock=5", status: s405, want: []string{"method GET"}},
		{name: "reset oversized body", method: P, target: "/inventory/reset?stock=5", body: big, status: s413, want: []string{"too large"}},
		// /healthz, /readyz, /metrics, /locks
		{name: "healthz POST", method: P, target: "/healthz", status: s405, want: []string{"method POST"}},
		{name: "readyz DELETE", method: http.MethodDelete, target: "/readyz", status: s405, want: []string{"method DELETE"}},
		{name: "metrics POST", method: P, target: "/metrics", status: s405, want: []string{"method POST"}},
		{name: "locks unknown sku", method: G, target: "/locks?sku=nope", status: s404, want: []string{"unknown sku"}},
		{name: "locks POST", method: P, target: "/locks", status: s405, want: []string{"method POST"}},
		// /getMultiLock
		{name: "multilock holdSeconds not a number", method: G, target: "/getMultiLock?holdSeconds=long", status: s400, want: []string{`holdSeconds="long"`, "whole number"}},
		{name: "multilock holdSeconds fraction", method: G, target: "/getMultiLock?holdSeconds=0.5", status: s400, want: []string{"holdSeconds", "whole number"}},
		{name: "multilock holdSeconds empty", method: G, target: "/getMultiLock?holdSeconds=", status: s400, want: []string{"holdSeconds", "whole number"}},
		{name: "multilock holdSeconds negative", method: G, target: "/getMultiLock?holdSeconds=-1", status: s400, want: []string{"holdSeconds", "negative"}},
		{name: "multilock holdSeconds beyond int64", method: G, target: "/getMultiLock?holdSeconds=" + huge, status: s400, want: []string{"holdSeconds", "too large", "the limit is"}},
		{name: "multilock holdSeconds beyond a day", method: G, target: "/getMultiLock?holdSeconds=86401", status: s400, want: []string{"holdSeconds", "too large"}},
		{name: "multilock holdSeconds above lab.maxWork", method: G, target: "/getMultiLock?holdSeconds=6", status: s400, want: []string{"holdSeconds=6", "maxWork"}},
		{name: "multilock holdSeconds twice", method: G, target: "/getMultiLock?holdSeconds=1&holdSeconds=2", status: s400, want: []string{"holdSeconds", "2 times"}},
		{name: "multilock unknown parameter", method: G, target: "/getMultiLock?seconds=1", status: s400, want: []string{"unknown parameter seconds"}},
		{name: "multilock PUT", method: http.MethodPut, target: "/getMultiLock?holdSeconds=1", status: s405, want: []string{"method PUT"}},
		// /lab
		{name: "lab scenarios POST", method: P, target: "/lab/scenarios", status: s405, want: []string{"method POST"}},
		{name: "lab unknown scenario", method: P, target: "/lab/scenarios/nope/run", status: s404, want: []string{"unknown scenario", `"nope"`}},
		{name: "lab run GET", method: G, target: "/lab/scenarios/" + scenario + "/run", status: s405, want: []string{"method GET"}},
		{name: "lab run unknown parameter", method: P, target: "/lab/scenarios/" + scenario + "/run?fast=1", status: s400, want: []string{"unknown parameter fast"}},
		{name: "lab run oversized body", method: P, target: "/lab/scenarios/" + scenario + "/run", body: big, status: s413, want: []string{"too large"}},
		{name: "burst n not a number", method: P, target: "/lab/burst?n=many", status: s400, want: []string{`n="many"`, "whole number"}},
		{name: "burst n empty", method: P, target: "/lab/burst?n=", status: s400, want: []string{"n=", "whole number"}},
		{name: "burst n zero", method: P, target: "/lab/burst?n=0", status: s400, want: []string{"n=0", "out of range"}},
		{name: "burst n negative", method: P, target: "/lab/burst?n=-3", status: s400, want: []string{"n=-3", "out of range"}},
		{name: "burst n above the maximum", method: P, target: fmt.Sprintf("/lab/burst?n=%d", lab.MaxBurst+1), status: s400, want: []string{"out of range"}},
		{name: "burst n beyond int64", method: P, target: "/lab/burst?n=" + huge, status: s400, want: []string{"too large", "the limit is"}},
		{name: "burst n twice", method: P, target: "/lab/burst?n=1&n=2", status: s400, want: []string{"n", "2 times"}},
		{name: "burst unknown mode", method: P, target: "/lab/burst?n=1&lock=nope", status: s400, want: []string{"unknown mode", `"nope"`}},
		{name: "burst empty mode", method: P, target: "/lab/burst?n=1&lock=", status: s400, want: []string{"lock= is empty"}},
		{name: "burst workMs not a number", method: P, target: "/lab/burst?n=1&workMs=x", status: s400, want: []string{`workMs="x"`, "whole number"}},
		{name: "burst workMs negative", method: P, target: "/lab/burst?n=1&workMs=-1", status: s400, want: []string{"workMs", "negative"}},
		{name: "burst workMs above lab.maxWork", method: P, target: "/lab/burst?n=1&lock=lua&workMs=5001", status: s400, want: []string{"workMs", "maximum"}},
		{name: "burst workMs with atomic", method: P, target: "/lab/burst?n=1&lock=atomic&workMs=10", status: s400, want: []string{"workMs", "does not apply to lock mode atomic"}},
		{name: "burst unknown parameter", method: P, target: "/lab/burst?n=1&crash=after-lock", status: s400, want: []string{"unknown parameter crash"}},
		{name: "burst GET", method: G, target: "/lab/burst?n=1", status: s405, want: []string{"method GET"}},
		{name: "burst oversized body", method: P, target: "/lab/burst?n=1", body: big, status: s413, want: []string{"too large"}},
		// the rest
		{name: "unknown endpoint", method: G, target: "/inventory/sales", status: s404, want: []string{"no such endpoint", "/inventory/sales"}},
		{name: "unknown dashboard file", method: G, target: "/dashboard/nope.js", status: s404, want: []string{"no such dashboard file"}},
		{name: "dashboard path escape", method: G, target: "/dashboard/..%2f..%2fgo.mod", status: s404, want: []string{"no such dashboard file"}},
		{name: "dashboard POST", method: P, target: "/", status: s405, want: []string{"method POST"}},
		// query strings Go's parser cannot read whole: it drops the pair, so ?lock=none; sold under lua
		{name: "sale semicolon", method: P, target: "/inventory/sale?lock=none;", status: s400, want: []string{"ambiguous query", "';'"}},
		{name: "sale semicolon between parameters", method: P, target: "/inventory/sale?lock=lua;workMs=5", status: s400, want: []string{"ambiguous query", "'&'"}},
		{name: "sale bad escape", method: P, target: "/inventory/sale?lock=%zz", status: s400, want: []string{"ambiguous query"}},
		{name: "restock semicolon", method: P, target: "/inventory/restock?stock=0;", status: s400, want: []string{"ambiguous query"}},
		{name: "reset semicolon", method: P, target: "/inventory/reset?stock=0;sku=x", status: s400, want: []string{"ambiguous query"}},
		{name: "inventory semicolon", method: G, target: "/inventory?sku=nope;", status: s400, want: []string{"ambiguous query"}},
		// a long path is quoted short
		{name: "unknown endpoint 50 KB", method: G, target: "/" + strings.Repeat("a", 50_000), status: s404, want: []string{"no such endpoint", "(50001 bytes)"}},
		{name: "method not allowed 50 KB", method: P, target: "/swagger/" + strings.Repeat("b", 50_000), status: s405, want: []string{"method POST", "(50009 bytes)"}},
	}
	runBadInputTable(t, f, cases)
}

// An error answer quotes at most 40 bytes of a bad path, parameter or query: a 50 KB one gets a
// few hundred bytes back.
func TestLongInputIsQuotedShort(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	long := strings.Repeat("x", 50_000)
	for _, q := range []struct{ method, target string }{
		{http.MethodGet, "/" + long}, {http.MethodPost, "/swagger/" + long}, {http.MethodDelete, "/inventory/sale?" + long},
		{http.MethodPost, "/inventory/sale?lock=" + long + ";"}, {http.MethodPost, "/inventory/sale?" + long + "=1"},
	} {
		r := do(t, q.method, f.HTTP.URL+q.target, nil)
		if r.status < 400 || r.status > 499 || len(r.raw) > 400 {
			t.Fatalf("%s %.60s...: %d with %d bytes, want a 4xx of at most 400: %.500s", q.method, q.target, r.status, len(r.raw), r.raw)
		}
	}
}

// TestBadInputWithTheLabDisabled: fault parameters, reset and the lab are refused when
// lab.enabled=false, also when the rest of the request is well-formed.
func TestBadInputWithTheLabDisabled(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lab.Enabled = false })
	// seed resets through the API, which the disabled lab refuses: give it the stock directly.
	servers := redisServers(t, f)
	ctx := context.Background()
	for name, c := range servers {
		if err := c.Set(ctx, "badinput:marker", name, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale", nil); r.status != http.StatusOK {
		t.Fatalf("a plain sale with the lab disabled: %d %s", r.status, r.raw)
	}
	checkoutSettled(t, f.RDB)
	scenario := lab.Scenarios()[0].Name
	P := http.MethodPost
	cases := []badRequest{
		{name: "sale workMs", method: P, target: "/inventory/sale?workMs=10", status: http.StatusBadRequest, want: []string{"workMs", "lab is disabled"}},
		{name: "sale freezeMs", method: P, target: "/inventory/sale?lock=fenced&freezeMs=10", status: http.StatusBadRequest, want: []string{"freezeMs", "lab is disabled"}},
		{name: "sale pause", method: P, target: "/inventory/sale?lock=uuid&pauseBeforeDelMs=10", status: http.StatusBadRequest, want: []string{"pauseBeforeDelMs", "lab is disabled"}},
		{name: "sale crash", method: P, target: "/inventory/sale?crash=after-lock", status: http.StatusBadRequest, want: []string{"crash=after-lock", "lab is disabled"}},
		{name: "reset", method: P, target: "/inventory/reset?stock=5", status: http.StatusForbidden, want: []string{"lab.enabled is false"}},
		{name: "burst", method: P, target: "/lab/burst?n=1", status: http.StatusForbidden, want: []string{"lab is disabled"}},
		{name: "scenario run", method: P, target: "/lab/scenarios/" + scenario + "/run", status: http.StatusForbidden, want: []string{"lab is disabled"}},
		{name: "sale semicolon", method: P, target: "/inventory/sale?lock=none;", status: http.StatusBadRequest, want: []string{"ambiguous query", "';'"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshotRedis(t, servers)
			r := send(t, c, f.HTTP.URL)
			checkRefused(t, c, r)
			if d := before.diff(snapshotRedis(t, servers)); len(d) > 0 {
				t.Fatalf("%s %s answered %d but changed Redis: %s", c.method, c.target, r.status, strings.Join(d, ", "))
			}
		})
	}
}

// TestSnapshotNoticesChanges: the snapshot the bad-input tests rely on really sees a sale, a
// reset, and a key that only gains a TTL (so "nothing changed" is not a snapshot that cannot
// tell).
func TestSnapshotNoticesChanges(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	servers := redisServers(t, f)
	seed(t, f, servers)
	ctx := context.Background()
	for _, change := range []struct {
		name string
		do   func()
		want string
	}{
		{"a sale", func() {
			do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=lua", nil)
			checkoutSettled(t, f.RDB)
		}, "changed data/inventory001"},
		{"a reset", func() { do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=7", nil) }, "data/"},
		{"a TTL only", func() { servers["master2"].Expire(ctx, "badinput:marker", time.Hour) }, "changed master2/badinput:marker"},
		{"a new key on a master", func() { servers["master3"].Set(ctx, "badinput:new", 1, 0) }, "created master3/badinput:new"},
	} {
		before := snapshotRedis(t, servers)
		change.do()
		d := strings.Join(before.diff(snapshotRedis(t, servers)), ", ")
		if !strings.Contains(d, change.want) {
			t.Fatalf("%s: snapshot diff %q does not show %q", change.name, d, change.want)
		}
	}
	// And a refused request's answer decodes as the error shape the table checks.
	var body map[string]any
	r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=nope", nil)
	if err := json.Unmarshal([]byte(r.raw), &body); err != nil || body["error"] == nil {
		t.Fatalf("refused sale: %d %s", r.status, r.raw)
	}
}
