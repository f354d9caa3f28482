package handler_test

// The rows of issue 21's table ("Safe to put on a network"), each tried as the attacker or the
// operator did, against the whole service on real redis-server processes when installed. Where an
// attack must be refused, Redis must be byte-for-byte unchanged: DEBUG DIGEST of the data Redis
// (a real server started with --enable-debug-command local; redis-server 7 refuses DEBUG
// otherwise), plus the key-by-key snapshot of every server, which the in-process Redis supports
// too.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/internal/redisproc"
	"seckill/internal/testredis"
)

// posture is a service whose data Redis answers DEBUG DIGEST when it is a real server.
type posture struct {
	f       *apptest.Fixture
	data    *redisproc.Server
	rdb     *redis.Client
	servers map[string]*redis.Client
	token   string
}

func newPosture(t *testing.T, lab bool, token string, edit func(*config.Config)) *posture {
	t.Helper()
	data, err := redisproc.Start(redisproc.Options{Args: []string{"--enable-debug-command", "local"}})
	if err != nil {
		t.Fatalf("start the data redis: %v", err)
	}
	t.Cleanup(data.Close)
	f := apptest.New(t, func(c *config.Config) {
		c.Redis.Addr = data.Addr
		c.Lab.Enabled = lab
		c.Server.AdminToken = token
		if edit != nil {
			edit(c)
		}
	})
	p := &posture{f: f, data: data, rdb: testredis.Client(t, data), token: token}
	p.servers = map[string]*redis.Client{"data": p.rdb}
	for i, m := range f.Masters {
		p.servers[fmt.Sprintf("master%d", i+1)] = testredis.Client(t, m)
	}
	return p
}

// state is what "Redis unchanged" compares: the data Redis's digest and every server's keys.
type state struct {
	digest string
	keys   redisState
}

func (p *posture) state(t *testing.T) state {
	t.Helper()
	st := state{keys: snapshotRedis(t, p.servers)}
	if p.data.Kind == redisproc.KindReal {
		d, err := p.rdb.Do(context.Background(), "DEBUG", "DIGEST").Text()
		if err != nil {
			t.Fatalf("DEBUG DIGEST: %v", err)
		}
		st.digest = d
	}
	return st
}

func (p *posture) unchanged(t *testing.T, what string, before state) {
	t.Helper()
	after := p.state(t)
	if d := before.keys.diff(after.keys); len(d) > 0 {
		t.Fatalf("%s was refused but Redis changed: %v", what, d)
	}
	if before.digest != after.digest {
		t.Fatalf("%s was refused but DEBUG DIGEST of the data Redis changed: %s -> %s", what, before.digest, after.digest)
	}
}

// send makes one request with a raw query (sent as written, encoded spellings included).
func (p *posture) send(t *testing.T, method, path, rawQuery string, token string) resp {
	t.Helper()
	u := p.f.HTTP.URL + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Admin-Token", token)
	}
	return doReq(t, req)
}

func (p *posture) stock(t *testing.T, n int64) {
	t.Helper()
	if r := p.send(t, http.MethodPost, "/inventory/restock", fmt.Sprintf("stock=%d", n), p.token); r.status != http.StatusOK {
		t.Fatalf("restock: %d %s", r.status, r.raw)
	}
}

// brokenSpellings are the deliberately broken modes, as written and encoded.
var brokenSpellings = []string{"lock=none", "lock=setnx", "lock=setnx-expire", "lock=setnx-ex", "lock=uuid",
	"lock=%6Eone", "lock=%6e%6f%6e%65", "%6Cock=none", "lock=NONE", "lock=none%20", "lock=%20none", "lock=none%00",
	"lock=no%E2%80%8Bne", "lock=%EF%BD%8E%EF%BD%8F%EF%BD%8E%EF%BD%85", "lock=setnx%2Dex", "lock=uuid&lock=lua"}

// faultSpellings are the fault parameters, with harmless and encoded values.
var faultSpellings = []string{"workMs=0", "workMs=8000", "workMs=%30", "%77orkMs=5", "freezeMs=1", "pauseBeforeDelMs=1",
	"leaseMs=1000", "crash=after-lock", "crash=before-expire", "crash=", "%63rash=after-lock", "crash=after%2Dlock",
	"lock=setnx&crash=after-lock", "lock=none&workMs=8000", "lock=lua&workMs=0"}

// Row 1: with the lab off, every broken mode and every fault is refused (a 4xx that names why),
// however spelled, and Redis is unchanged; 200 anonymous lock=none sales sell nothing.
func TestLabOffRefusesBrokenModesAndFaults(t *testing.T) {
	t.Parallel()
	token := secret(t, "tok-")
	p := newPosture(t, false, token, nil)
	p.stock(t, 10)
	before := p.state(t)
	for _, q := range append(append([]string{}, brokenSpellings...), faultSpellings...) {
		for _, tok := range []string{"", token} { // the lab is off: the operator cannot either
			r := p.send(t, http.MethodPost, "/inventory/sale", q, tok)
			if r.status < 400 || r.status > 499 {
				t.Fatalf("POST /inventory/sale?%s (token %t): %d, want a 4xx: %s", q, tok != "", r.status, r.raw)
			}
			if !strings.Contains(r.raw, `"error"`) {
				t.Fatalf("POST /inventory/sale?%s: %d without a reason: %s", q, r.status, r.raw)
			}
		}
		p.unchanged(t, "POST /inventory/sale?"+q, before)
	}
	// The table's attack: 200 anonymous lock=none sales at 50 at a time, stock 10.
	var wg sync.WaitGroup
	statuses := make(chan int, 200)
	sem := make(chan struct{}, 50)
	for range 200 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := http.Post(p.f.HTTP.URL+"/inventory/sale?lock=none", "", nil)
			if err != nil {
				statuses <- 0
				return
			}
			res.Body.Close()
			statuses <- res.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusBadRequest {
			t.Fatalf("an anonymous lock=none sale answered %d, want 400", s)
		}
	}
	p.unchanged(t, "200 anonymous lock=none sales", before)
	// A safe sale still sells, without a token.
	if r := p.send(t, http.MethodPost, "/inventory/sale", "lock=lua", ""); r.status != http.StatusOK {
		t.Fatalf("a lua sale with the lab off: %d %s", r.status, r.raw)
	}
	if n, _ := p.rdb.Get(context.Background(), "inventory001").Int64(); n != 9 {
		t.Fatalf("stock %d after one sale of 10, want 9", n)
	}
}

// Rows 2 to 5: with the lab on and a token set, a broken mode, a fault, the burst and reset need
// the token; a GET never changes state (an <img> on another origin plants nothing).
func TestLabOnWithTokenNeedsTheOperator(t *testing.T) {
	t.Parallel()
	token := secret(t, "tok-")
	p := newPosture(t, true, token, nil)
	p.stock(t, 20)
	before := p.state(t)
	for _, q := range append(append([]string{}, brokenSpellings...), faultSpellings...) {
		r := p.send(t, http.MethodPost, "/inventory/sale", q, "")
		if r.status < 400 || r.status > 499 {
			t.Fatalf("anonymous POST /inventory/sale?%s: %d, want a 4xx: %s", q, r.status, r.raw)
		}
		// GET is refused whatever it asks, the right token included.
		for _, tok := range []string{"", token} {
			if r := p.send(t, http.MethodGet, "/inventory/sale", q, tok); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != http.MethodPost {
				t.Fatalf("GET /inventory/sale?%s (token %t): %d %s, want 405 with Allow: POST", q, tok != "", r.status, r.raw)
			}
		}
		p.unchanged(t, "anonymous /inventory/sale?"+q, before)
	}
	for _, target := range []string{"/lab/burst?n=2000&lock=none", "/inventory/reset?stock=1000000000", "/lab/scenarios/none/run"} {
		path, q, _ := strings.Cut(target, "?")
		if r := p.send(t, http.MethodPost, path, q, ""); r.status != http.StatusUnauthorized {
			t.Fatalf("anonymous POST %s: %d %s, want 401", target, r.status, r.raw)
		}
		p.unchanged(t, "anonymous POST "+target, before)
	}
	// The operator may: a fault with the token is served.
	if r := p.send(t, http.MethodPost, "/inventory/sale", "lock=reentrant&workMs=1", token); r.status != http.StatusOK {
		t.Fatalf("the operator's workMs=1 sale: %d %s", r.status, r.raw)
	}
	// The operator's burst in a broken mode sells (its sales are the operator's).
	if r := p.send(t, http.MethodPost, "/lab/burst", "n=5&lock=none", token); r.status != http.StatusOK || !strings.Contains(r.raw, `"sold":`) {
		t.Fatalf("the operator's burst of lock=none: %d %s", r.status, r.raw)
	}
	// Without a token the lab stays open, as on a laptop.
	q := newPosture(t, true, "", nil)
	if r := q.send(t, http.MethodGet, "/inventory/sale", "lock=none&workMs=1", ""); r.status != http.StatusOK {
		t.Fatalf("the laptop lab (no token): GET lock=none&workMs=1: %d %s", r.status, r.raw)
	}
}

// Row 7: the data Redis comes back empty with the lab off. A sale is a 503 that says what to do,
// /readyz is not ready, the operator restocks with the token, and selling resumes; a restart of
// the service never resets a stock Redis still has.
func TestEmptyDataRedisIsAnOperatorsFault(t *testing.T) {
	t.Parallel()
	token := secret(t, "tok-")
	p := newPosture(t, false, token, func(c *config.Config) { c.Lock.Wait = time.Second })
	if r := p.send(t, http.MethodGet, "/readyz", "", ""); r.status != http.StatusOK {
		t.Fatalf("/readyz before: %d %s", r.status, r.raw)
	}
	if err := p.rdb.FlushAll(context.Background()).Err(); err != nil { // as a restart without persistence
		t.Fatal(err)
	}
	r := p.send(t, http.MethodPost, "/inventory/sale", "", "")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.raw, "/inventory/restock") || r.header.Get("Retry-After") == "" {
		t.Fatalf("a sale without a stock key: %d %s, want 503 naming /inventory/restock, with Retry-After", r.status, r.raw)
	}
	if r := p.send(t, http.MethodGet, "/readyz", "", ""); r.status != http.StatusServiceUnavailable || !strings.Contains(r.raw, "restock") {
		t.Fatalf("/readyz without a stock key: %d %s, want 503 naming the restock", r.status, r.raw)
	}
	if r := p.send(t, http.MethodPost, "/inventory/restock", "stock=5", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("anonymous restock: %d %s, want 401", r.status, r.raw)
	}
	if r := p.send(t, http.MethodPost, "/inventory/reset", "stock=5", token); r.status != http.StatusForbidden {
		t.Fatalf("reset with the lab off: %d %s, want 403 (restock is the operator's way)", r.status, r.raw)
	}
	p.stock(t, 5)
	if r := p.send(t, http.MethodGet, "/readyz", "", ""); r.status != http.StatusOK {
		t.Fatalf("/readyz after the restock: %d %s", r.status, r.raw)
	}
	if r := p.send(t, http.MethodPost, "/inventory/sale", "", ""); r.status != http.StatusOK {
		t.Fatalf("a sale after the restock: %d %s", r.status, r.raw)
	}
	r = do(t, http.MethodGet, p.f.HTTP.URL+"/inventory", nil)
	if r.body["stock"] != 4.0 || r.body["initialStock"] != 5.0 || r.body["lostUpdates"] != 0.0 {
		t.Fatalf("audit after a restock to 5 and one sale: %s", r.raw)
	}
	// A second service on the same Redis (a restart) leaves the stock as it is.
	again := apptest.New(t, func(c *config.Config) {
		c.Redis.Addr = p.data.Addr
		c.Redis.Masters = p.f.Cfg.Redis.Masters
		c.Lab.Enabled = false
	})
	_ = again
	if n, _ := p.rdb.Get(context.Background(), "inventory001").Int64(); n != 4 {
		t.Fatalf("stock %d after a second instance started, want the 4 Redis had", n)
	}
	// Without a token and with the lab off there is no operator: restock is refused, naming the switch.
	q := newPosture(t, false, "", nil)
	if r := q.send(t, http.MethodPost, "/inventory/restock", "stock=5", ""); r.status != http.StatusForbidden || !strings.Contains(r.raw, "adminToken") {
		t.Fatalf("restock with no token configured and the lab off: %d %s", r.status, r.raw)
	}
}

// Readiness is "can sell in the configured mode": redlock with one master of three down is
// ready and sells; multilock with one down is not, and its sale fails at once, not after the wait.
func TestReadinessFollowsTheConfiguredMode(t *testing.T) {
	t.Parallel()
	const wait = 4 * time.Second
	for _, c := range []struct {
		mode  string
		ready bool
	}{{"redlock", true}, {"multilock", false}, {"lua", true}} {
		p := newPosture(t, false, "", func(cfg *config.Config) { cfg.Lock.Mode, cfg.Lock.Wait = c.mode, wait })
		p.f.Masters[1].Stop()
		r := p.send(t, http.MethodGet, "/readyz", "", "")
		if (r.status == http.StatusOK) != c.ready {
			t.Fatalf("%s with master 2 of 3 down: /readyz %d %s, want ready=%t", c.mode, r.status, r.raw, c.ready)
		}
		start := time.Now()
		r = p.send(t, http.MethodPost, "/inventory/sale", "", "")
		took := time.Since(start)
		switch {
		case c.ready && r.status != http.StatusOK:
			t.Fatalf("%s with master 2 down: sale %d %s", c.mode, r.status, r.raw)
		case !c.ready && (r.status != http.StatusServiceUnavailable || took > wait+time.Second):
			// The lock rides out a master that refuses connections within its wait (a failover
			// may bring it back), and answers 503 when the wait ends that way.
			t.Fatalf("%s with master 2 down: sale %d after %s (wait %s), want a 503 by the end of the wait: %s", c.mode, r.status, took, wait, r.raw)
		}
	}
}

// A lock left without an expiry is named in the 503 with what clears it; /locks tells a fencing
// counter (no TTL by design) from a deadlock.
func TestDeadlockIsNamedAndCountersAreNot(t *testing.T) {
	t.Parallel()
	p := newPosture(t, true, "", func(c *config.Config) { c.Lock.Wait = 300 * time.Millisecond })
	p.stock(t, 10)
	if r := p.send(t, http.MethodPost, "/inventory/sale", "lock=fenced", ""); r.status != http.StatusOK {
		t.Fatalf("fenced sale: %d %s", r.status, r.raw)
	}
	r := p.send(t, http.MethodGet, "/locks", "", "")
	if !strings.Contains(r.raw, `"kind":"fencing counter"`) || strings.Contains(r.raw, `"deadlock":true`) {
		t.Fatalf("/locks after a fenced sale should show a fencing counter and no deadlock: %s", r.raw)
	}
	p.send(t, http.MethodPost, "/inventory/sale", "lock=setnx-expire&crash=before-expire", "")
	r = p.send(t, http.MethodPost, "/inventory/sale", "lock=setnx-expire", "")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.raw, "no expiry") || !strings.Contains(r.raw, "deadlock") || !strings.Contains(r.raw, "DEL") {
		t.Fatalf("a sale behind a lock without expiry: %d %s, want a 503 naming the deadlock and what clears it", r.status, r.raw)
	}
	if r := p.send(t, http.MethodGet, "/locks", "", ""); !strings.Contains(r.raw, `"deadlock":true`) {
		t.Fatalf("/locks does not flag the deadlock: %s", r.raw)
	}
}

// Row 9 and the in-flight bound: a 50 KB value is quoted by a short prefix only (body <= 2 KB);
// sales beyond server.maxInFlight are answered 503 at once.
func TestBoundedAnswersAndSalesInFlight(t *testing.T) {
	t.Parallel()
	p := newPosture(t, true, "", func(c *config.Config) { c.Server.MaxInFlight = 1 })
	p.stock(t, 10)
	big := strings.Repeat("A", 50<<10)
	for _, q := range []string{"lock=" + big, "sku=" + big, "crash=" + big, "workMs=" + big, big + "=1", "lock=" + url.QueryEscape(strings.Repeat("é", 20<<10))} {
		for _, path := range []string{"/inventory/sale", "/inventory/restock", "/inventory/reset", "/lab/burst"} {
			r := p.send(t, http.MethodPost, path, q, "")
			if r.status < 400 || r.status > 499 || len(r.raw) > 2048 {
				t.Fatalf("POST %s?%.20s… (%d bytes): %d with a %d-byte body, want a 4xx of at most 2 KB", path, q, len(q), r.status, len(r.raw))
			}
		}
	}
	held := make(chan resp, 1)
	go func() { held <- p.send(t, http.MethodPost, "/inventory/sale", "lock=lua&workMs=1500", "") }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	r := p.send(t, http.MethodPost, "/inventory/sale", "lock=lua", "")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.raw, "maxInFlight") || time.Since(start) > time.Second {
		t.Fatalf("a sale beyond server.maxInFlight=1: %d after %s: %s, want a 503 at once", r.status, time.Since(start), r.raw)
	}
	if r := <-held; r.status != http.StatusOK {
		t.Fatalf("the sale in flight: %d %s", r.status, r.raw)
	}
}
