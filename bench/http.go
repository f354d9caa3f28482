package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"seckill/store"
)

// httpStock is the stock an HTTP cell starts from: the service's maximum, never sold out.
const httpStock = 1_000_000_000

// errHTTPSale: a sale answered with neither a sale nor a sold-out (a lock timeout, a 5xx).
var errHTTPSale = errors.New("bench: sale not made")

// RunHTTP is the bench over HTTP: the buyers fire POST /inventory/sale?lock=MODE at a running
// service (nginx in front of several instances: base is its URL) in a closed loop, for every
// lock mode in opt.Strategies (default lua and fair) at every crowd size. Each cell reports
// sales/s, the latency of every request in the window (p50, p99), the instances that answered
// with the median lock wait each reported (its waitMs), and the audit of GET /inventory.
// adminToken is sent with the stock reset when set.
func RunHTTP(ctx context.Context, opt Options, base, adminToken string) (Report, error) {
	opt.defaults()
	modes := opt.Strategies
	if len(modes) == 0 {
		modes = []string{"lua", "fair"}
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Report{}, fmt.Errorf("bench: --url %q: want http://host:port", base)
	}
	rep := Report{Started: time.Now(), Machine: machine(), Concurrency: opt.Concurrency, WaitQuantileP: WaitQuantileP,
		DurationMs: opt.Duration.Milliseconds(), WarmupMs: opt.Warmup.Milliseconds(), Rounds: 1,
		LeaseMs: opt.Lease.Milliseconds()}
	rep.Redis.Kind = "behind " + u.String()
	client := &http.Client{Timeout: opt.Wait + 5*time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: slices.Max(opt.Concurrency) + 8}}
	total := len(modes) * len(opt.Concurrency)
	for _, mode := range modes {
		for _, n := range opt.Concurrency {
			c, err := httpCell(ctx, client, u.String(), adminToken, mode, n, opt)
			if err != nil {
				return rep, fmt.Errorf("bench: %s × %d over HTTP: %w", mode, n, err)
			}
			rep.Cells = append(rep.Cells, c)
			if opt.Progress != nil {
				opt.Progress(len(rep.Cells), total, c)
			}
		}
	}
	rep.ElapsedMs = time.Since(rep.Started).Milliseconds()
	return rep, nil
}

// httpAnswer is what one sale answered (the fields the bench reads).
type httpAnswer struct {
	Sold     bool    `json:"sold"`
	Instance string  `json:"instance"`
	WaitMs   float64 `json:"waitMs"`
}

type httpWait struct {
	at       time.Time
	instance string
	wait     time.Duration
}

func httpCell(ctx context.Context, client *http.Client, base, adminToken, mode string, buyers int, opt Options) (Cell, error) {
	if err := httpPost(ctx, client, base+"/inventory/reset?stock="+fmt.Sprint(httpStock), adminToken, nil); err != nil {
		return Cell{}, fmt.Errorf("reset: %w", err)
	}
	saleURL := base + "/inventory/sale?lock=" + url.QueryEscape(mode)
	var mu sync.Mutex
	var waits []httpWait
	sale := func(ctx context.Context, _ int) error {
		var a httpAnswer
		if err := httpPost(ctx, client, saleURL, "", &a); err != nil {
			return err
		}
		mu.Lock()
		waits = append(waits, httpWait{at: time.Now(), instance: a.Instance, wait: time.Duration(a.WaitMs * float64(time.Millisecond))})
		mu.Unlock()
		return nil
	}
	start := time.Now()
	st := runCell(ctx, buyers, 1, timing{warmup: opt.Warmup, dur: opt.Duration, grace: grace}, sale)
	from, to := start.Add(opt.Warmup), start.Add(opt.Warmup+opt.Duration)
	var inv struct {
		Sold        int64 `json:"sold"`
		LostUpdates int64 `json:"lostUpdates"`
		Oversold    int64 `json:"oversold"`
	}
	if err := httpGet(context.WithoutCancel(ctx), client, base+"/inventory", &inv); err != nil {
		return Cell{}, fmt.Errorf("audit: %w", err)
	}
	slices.Sort(st.latencies)
	s := Strategy{Name: mode + "-http", Kind: "http", Locked: mode != "atomic"}
	c := newCell(s, buyers, 0, st, store.Inventory{LostUpdates: inv.LostUpdates, Oversold: inv.Oversold}, 0)
	// The lock wait each instance reported for the sales answered inside the window.
	by := map[string][]time.Duration{}
	for _, w := range waits {
		if !w.at.Before(from) && !w.at.After(to) && w.instance != "" {
			by[w.instance] = append(by[w.instance], w.wait)
		}
	}
	c.InstanceP50Ms, c.InstanceNames = nil, slices.Sorted(maps.Keys(by))
	for _, name := range c.InstanceNames {
		d := by[name]
		slices.Sort(d)
		c.InstanceP50Ms = append(c.InstanceP50Ms, msf(percentile(d, 0.5)))
	}
	c.Instances = len(c.InstanceNames)
	return c, nil
}

// httpPost posts to u and decodes a 200 answer into v (nil: ignore it); a sold-out or a lock
// timeout is errHTTPSale (counted as a failed attempt), other statuses too.
func httpPost(ctx context.Context, client *http.Client, u, adminToken string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	if adminToken != "" {
		req.Header.Set("X-Admin-Token", adminToken)
	}
	return httpDo(client, req, v)
}

func httpGet(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return httpDo(client, req, v)
}

func httpDo(client *http.Client, req *http.Request, v any) error {
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 300)) // for the error text only
		return fmt.Errorf("%w: %s %s: %d %s", errHTTPSale, req.Method, req.URL.Path, res.StatusCode, strings.TrimSpace(string(body)))
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(v)
}
