package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"seckill/internal/history"
)

// loadFlags are the flags of `seckill load`.
type loadFlags struct {
	url        string
	lock       string
	sku        string
	n, c       int
	timeout    time.Duration
	limit      time.Duration
	historyDir string
	query      string
	stock      int64
	adminToken string
}

// errNotLinearizable makes `seckill load` exit 1 when the answers could not have come from one
// stock counter taken one sale at a time.
var errNotLinearizable = errors.New("load: the history is NOT linearizable")

func (l *loadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.url, "url", "http://127.0.0.1:8080", "the service (or nginx in front of several)")
	fs.StringVar(&l.lock, "lock", "", "lock mode of the sales (default: the service's lock.mode)")
	fs.StringVar(&l.sku, "sku", "", "SKU (default: the service's inventory.key)")
	fs.IntVar(&l.n, "n", 300, "sales to fire (1..100000)")
	fs.IntVar(&l.c, "c", 50, "sales at once (1..1000)")
	fs.DurationVar(&l.timeout, "timeout", 30*time.Second, "how long one sale may take")
	fs.DurationVar(&l.limit, "time", 2*time.Minute, "how long the whole run may take; sales not started by then are not fired")
	fs.StringVar(&l.query, "query", "", "extra sale parameters, e.g. workMs=5 (the lab's faults need lab.enabled)")
	fs.Int64Var(&l.stock, "stock", 0, "restock the SKU to this many units first (POST /inventory/restock; needs --admin-token when the service has one); 0: use the stock as it is")
	fs.StringVar(&l.adminToken, "admin-token", "", "the service's server.adminToken, for --stock")
	fs.StringVar(&l.historyDir, "history-dir", "", "where to write the visualisation of a history that is not linearizable, created when missing (default: none is written)")
}

// runLoad reads the stock, fires the sales, and prints the answers and the history's verdict:
// the stock counter's model checked by porcupine against what each buyer was told and when
// (the same check as the lab's HISTORY column). It trusts nothing the service counts.
func runLoad(ctx context.Context, o loadFlags, stdout io.Writer) error {
	if o.n < 1 || o.n > 100_000 || o.c < 1 || o.c > 1000 {
		return fmt.Errorf("load: --n %d and --c %d: want 1..100000 and 1..1000", o.n, o.c)
	}
	base, err := url.Parse(strings.TrimRight(o.url, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Errorf("load: --url %q: want http://host:port", o.url)
	}
	ctx, cancel := context.WithTimeout(ctx, o.limit)
	defer cancel()
	client := &http.Client{Timeout: o.timeout, Transport: &http.Transport{MaxIdleConnsPerHost: o.c}}
	q := url.Values{}
	if o.sku != "" {
		q.Set("sku", o.sku)
	}
	var inv struct {
		SKU   string `json:"sku"`
		Stock int64  `json:"stock"`
	}
	if o.stock < 0 {
		return fmt.Errorf("load: --stock %d: want 0 (as it is) or more", o.stock)
	}
	if o.stock > 0 {
		if err := restock(ctx, client, base.String(), q, o.stock, o.adminToken); err != nil {
			return fmt.Errorf("load: restock: %w", err)
		}
	}
	if err := getJSON(ctx, client, base.String()+"/inventory?"+q.Encode(), &inv); err != nil {
		return fmt.Errorf("load: read the stock: %w", err)
	}
	if inv.Stock <= 0 {
		return fmt.Errorf("load: %s is sold out (stock %d): pass --stock N to restock it first", inv.SKU, inv.Stock)
	}
	if o.lock != "" {
		q.Set("lock", o.lock)
	}
	extra, err := url.ParseQuery(o.query)
	if err != nil {
		return fmt.Errorf("load: --query %q: %w", o.query, err)
	}
	for k, vs := range extra {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	saleURL := base.String() + "/inventory/sale?" + q.Encode()

	origin := time.Now()
	outs := make([]history.Sale, 0, o.n)
	var mu sync.Mutex
	next := make(chan struct{})
	var wg sync.WaitGroup
	for range o.c {
		wg.Go(func() {
			for range next {
				out := sale(ctx, client, saleURL)
				mu.Lock()
				outs = append(outs, out)
				mu.Unlock()
			}
		})
	}
feed:
	for range o.n {
		select {
		case next <- struct{}{}:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	took := time.Since(origin)

	kinds := map[string]int{}
	for _, out := range outs {
		kinds[out.Kind]++
	}
	mode := o.lock
	if mode == "" {
		mode = "default"
	}
	fmt.Fprintf(stdout, "load: lock %s, %d sales at %d through %s in %s: sold %d, soldout %d, other %d\n",
		mode, len(outs), o.c, base, took.Round(time.Millisecond), kinds["sold"], kinds["soldout"], len(outs)-kinds["sold"]-kinds["soldout"])
	var verdict, file string
	if o.historyDir == "" { // a drawing only where the user asked: a run must not leave files nobody removes
		verdict = history.Verdict(inv.Stock, origin, outs)
	} else if verdict, file, err = history.Check(loadSource(o, mode, base, inv.SKU, inv.Stock, len(outs), origin),
		inv.Stock, origin, outs, o.historyDir); err != nil {
		return fmt.Errorf("load: check the history: %w", err)
	}
	fmt.Fprintf(stdout, "history: %d answers from stock %d of %s: %s\n", len(outs), inv.Stock, inv.SKU, verdict)
	switch {
	case file != "":
		fmt.Fprintf(stdout, "history: visualisation in %s\n", file)
	case verdict == history.NotLinearizable:
		fmt.Fprintf(stdout, "history: --history-dir DIR writes its drawing\n")
	}
	if verdict == history.NotLinearizable {
		return errNotLinearizable
	}
	return nil
}

// loadSource says, for the header of the history's drawing, what the run was: its sales, the
// service, the SKU and its stock, the lock mode and when it started.
func loadSource(o loadFlags, mode string, base *url.URL, sku string, stock int64, sales int, origin time.Time) history.Source {
	about := fmt.Sprintf("%d sales, %d at a time, on %s through %s, from stock %d, started %s",
		sales, o.c, sku, base, stock, origin.UTC().Format("2006-01-02 15:04:05 UTC"))
	if o.query != "" {
		about += ", with " + o.query
	}
	src := history.Source{Name: "load-" + mode, Title: "seckill load: the sales no stock counter can explain",
		Kind: "Load run", About: about, Mode: o.lock}
	if o.lock == "" {
		src.About += ", in the service's lock mode (lock.mode)"
	}
	return src
}

// restock sets the SKU's stock through the operator's endpoint.
func restock(ctx context.Context, client *http.Client, base string, q url.Values, stock int64, token string) error {
	rq := url.Values{"stock": {strconv.FormatInt(stock, 10)}}
	if sku := q.Get("sku"); sku != "" {
		rq.Set("sku", sku)
	}
	return call(ctx, client, http.MethodPost, base+"/inventory/restock?"+rq.Encode(), token, nil)
}

// sale fires one sale and says what its buyer was told, with when it asked and when it heard.
func sale(ctx context.Context, client *http.Client, saleURL string) (out history.Sale) {
	out = history.Sale{Start: time.Now(), Kind: "error"}
	defer func() { out.End = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, saleURL, nil)
	if err != nil {
		return out
	}
	res, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			out.Kind = "timeout"
		}
		return out
	}
	defer res.Body.Close()
	var body struct {
		Sold       bool  `json:"sold"`
		Remaining  int64 `json:"remaining"`
		StaleWrite bool  `json:"staleWrite"`
	}
	decErr := json.NewDecoder(res.Body).Decode(&body)
	switch {
	case decErr != nil:
	case res.StatusCode == http.StatusOK && body.Sold:
		out.Kind, out.Remaining = "sold", body.Remaining
	case res.StatusCode == http.StatusConflict && body.StaleWrite:
		out.Kind = "stale"
	case res.StatusCode == http.StatusConflict:
		out.Kind = "soldout"
	case res.StatusCode == http.StatusServiceUnavailable:
		out.Kind = "timeout"
	}
	return out
}

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	return call(ctx, client, http.MethodGet, u, "", v)
}

// call sends one request (with the admin token when given), wants 200, and decodes the answer
// into v when v is not nil.
func call(ctx context.Context, client *http.Client, method, u, token string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("X-Admin-Token", token)
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("%s %s: %s: %s", method, u, res.Status, strings.TrimSpace(string(b)))
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(v)
}
