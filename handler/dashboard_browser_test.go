package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"seckill/config"
	"seckill/internal/apptest"
	"seckill/lab"
)

// chromium finds the browser: SECKILL_CHROMIUM, else Debian's chromium on PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SECKILL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install -y chromium, or set SECKILL_CHROMIUM): skipping the browser test of the dashboard")
	return ""
}

// artifact is where a test writes a file for CI to keep: $SECKILL_ARTIFACTS or artifacts/ at
// the repository root.
func artifact(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("SECKILL_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDashboardInChromium drives the dashboard in headless Chromium through the DevTools
// protocol: a burst draws the chart, clicking "run" on two scenarios fills their rows with the
// verdicts the lab answers, and a run started over HTTP shows up in its row. A screenshot is
// saved for CI.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	// A 3 s lease renews every second, so the TTL bars visibly drop and jump back during a hold.
	f := apptest.New(t, func(c *config.Config) { c.Lock.Lease = 3 * time.Second })

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()

	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitJS := func(what, expr string, limit time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(limit))); err != nil {
			t.Fatalf("wait for %s: %v", what, err)
		}
	}

	// A run of none by another process, as `go run . lab` on the same Redis makes (no file written,
	// the drawing kept in Redis with the run): its row links the drawing, which this instance,
	// which did not run it, serves (issue 37, item 5).
	var masters []redis.UniversalClient
	for _, m := range f.Masters {
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		defer c.Close()
		masters = append(masters, c)
	}
	sc, err := lab.Lookup("none")
	if err != nil {
		t.Fatal(err)
	}
	if res := (&lab.Runner{Data: f.RDB, Masters: masters, NoHistoryFiles: true}).Run(ctx, sc); res.History != lab.NotLinearizable ||
		!res.HistoryKept || res.HistoryFile != "" {
		t.Fatalf("none, run as the CLI does: history %q, kept in Redis %v, file %q", res.History, res.HistoryKept, res.HistoryFile)
	}

	step("open the dashboard", chromedp.Navigate(f.HTTP.URL+"/"),
		chromedp.WaitVisible(css(`button.run[data-scenario="none"]`)))
	waitJS("none's row from the other process", `document.querySelector('#row-none td[data-col="history"] a')?.textContent.startsWith('NO')`, 10*time.Second)
	cliLink, err := chromedp.Run(bctx, chromedp.AttributeValue(css(`#row-none td[data-col="history"] a`), "href"))
	if err != nil || cliLink.Value != "/lab/scenarios/none/history" {
		t.Fatalf("the history link of none, run as the CLI does: %q %v", cliLink.Value, err)
	}
	if r := do(t, http.MethodGet, f.HTTP.URL+cliLink.Value, nil); r.status != http.StatusOK ||
		!strings.Contains(r.raw, "<title>seckill lab, row 1 none: ") || !strings.Contains(r.raw, "<b>Scenario</b> none (row 1") {
		t.Fatalf("the history link of none, run as the CLI does: %d %.300s", r.status, r.raw)
	}
	modes := text("#burst-mode")
	step("fire a burst", chromedp.SetValue(css("#burst-n"), "150"), chromedp.SetValue(css("#burst-work"), "2"),
		chromedp.Click(css("#burst")))
	waitJS("the burst's result", `document.querySelector('#burst-result').textContent.includes('sales/s')`, 30*time.Second)
	burst := text("#burst-result")
	step("run scenario none", chromedp.Click(css(`button.run[data-scenario="none"]`)))
	waitJS("the verdict of none", `document.querySelector('#verdict-none').dataset.verdict !== undefined`, 30*time.Second)
	noneVerdict := text("#verdict-none")
	// Its timeline: every buyer inside at once (red), and the link to its failing history.
	waitJS("the timeline of none", `!document.querySelector('#history-link').hidden &&
		document.querySelector('#history-link').getAttribute('href') === '/lab/scenarios/none/history' &&
		/together with another buyer \(([1-9][0-9]*) entered while another was inside; the table's overlaps, counted in Redis: ([1-9][0-9]*)\)/.test(document.querySelector('#scenario-caption').textContent)`, 5*time.Second)
	noneCaption := text("#scenario-caption")
	if r := do(t, http.MethodGet, f.HTTP.URL+"/lab/scenarios/none/history", nil); r.status != http.StatusOK || !strings.Contains(r.raw, "<html") {
		t.Errorf("the history link of none: %d %.200s", r.status, r.raw)
	}
	step("run scenario atomic", chromedp.Click(css(`button.run[data-scenario="atomic"]`)))
	waitJS("the verdict of atomic", `document.querySelector('#verdict-atomic').dataset.verdict !== undefined`, 30*time.Second)
	atomicVerdict := text("#verdict-atomic")
	waitJS("the timeline of atomic", `document.querySelector('#history-link').hidden &&
		document.querySelector('#scenario-caption').textContent.includes('another buyer (0 entered')`, 5*time.Second)
	t.Logf("timeline of none: %s", noneCaption)
	// none's row links its failing history in its own cell.
	waitJS("the history cell of none", `document.querySelector('#row-none td[data-col="history"] a')?.getAttribute('href') === '/lab/scenarios/none/history'`, 5*time.Second)
	// A run the page did not start (over HTTP, as curl or another tab would) fills its row too.
	if r := do(t, http.MethodPost, f.HTTP.URL+"/lab/scenarios/fenced/run", nil); r.status != http.StatusOK {
		t.Fatalf("run fenced over HTTP: %d %s", r.status, r.raw)
	}
	waitJS("the verdict of fenced, run over HTTP", `document.querySelector('#verdict-fenced').dataset.verdict === 'HELD' &&
		document.querySelector('#scenario-caption').textContent.startsWith('fenced:')`, 15*time.Second)
	// uuid, run over HTTP: the timeline's red counts what the table's overlaps count (buyers inside
	// the read-check-write together), so the caption's two figures are the Go count of its
	// timeline and the audit's; before, it counted holders from acquire to answer (3 red, 0 overlaps).
	r := do(t, http.MethodPost, f.HTTP.URL+"/lab/scenarios/uuid/run", nil)
	var uuidRun lab.Result
	if err := json.Unmarshal([]byte(r.raw), &uuidRun); r.status != http.StatusOK || err != nil {
		t.Fatalf("run uuid over HTTP: %d %v %s", r.status, err, r.raw)
	}
	want := fmt.Sprintf("(%d entered while another was inside; the table's overlaps, counted in Redis: %d)",
		lab.TimelineOverlaps(uuidRun.Timeline), uuidRun.Overlaps)
	waitJS("the timeline of uuid", `document.querySelector('#scenario-caption').textContent.startsWith('uuid:') &&
		document.querySelector('#scenario-caption').textContent.includes(`+strconv.Quote(want)+`)`, 15*time.Second)
	// The inventory cards refresh every 500ms; wait until they show the burst's sales.
	waitJS("the sold card", `Number(document.querySelector('#sold').textContent) > 0`, 10*time.Second)
	sold := text("#sold")
	if !strings.Contains(modes, "reentrant") || !strings.Contains(modes, "atomic") {
		t.Errorf("the lock selector lacks modes: %q", modes)
	}
	if !strings.Contains(burst, "150 sales with lock lua") {
		t.Errorf("burst result: %q", burst)
	}
	if noneVerdict != "REPRODUCED" || atomicVerdict != "HELD" {
		t.Errorf("verdicts on the page: none %q (want REPRODUCED), atomic %q (want HELD)", noneVerdict, atomicVerdict)
	}
	if inv := inventory(t, f); sold != strconv.FormatInt(inv.Sold, 10) {
		t.Errorf("the page shows sold %s, /inventory says %d", sold, inv.Sold)
	}

	// For the README's picture (SECKILL_DASHBOARD_PNG set), fill the whole verdict table.
	docs := os.Getenv("SECKILL_DASHBOARD_PNG")
	if docs != "" {
		step("run all scenarios", chromedp.Click(css("#run-all")))
		waitJS("every verdict", `[...document.querySelectorAll('td.verdict')].every((v) => v.dataset.verdict !== undefined)`, 90*time.Second)
	}

	// Hold the multilock for 3 s: the lock panel must show its key on the three masters, with
	// the holder and a TTL bar, while it is held.
	step("hold the multilock", chromedp.SetValue(css("#hold-seconds"), "3"), chromedp.Click(css("#hold")))
	waitJS("the multilock on three masters",
		`[...document.querySelectorAll('#locks .lockrow')].filter((r) => r.textContent.includes('master') && r.textContent.includes(':lock:multilock') && r.querySelector('.fill').style.width !== '').length === 3`,
		10*time.Second)
	time.Sleep(1200 * time.Millisecond) // one renewal (every lease/3 = 1 s), so the picture shows it
	locks := text("#locks")
	if !strings.Contains(locks, "this instance") || !strings.Contains(locks, "ms") {
		t.Errorf("the lock panel lacks the holder or the TTL: %q", locks)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := artifact(t, "dashboard.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshot: %s", shot)
	if docs != "" {
		if err := os.WriteFile(docs, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("dashboard screenshot also written to %s", docs)
	}
	waitJS("the end of the hold", `document.querySelector('#hold-result').textContent.includes('renewals')`, 10*time.Second)
	if hold := text("#hold-result"); strings.Contains(hold, "LOST") {
		t.Errorf("the multilock was lost while held: %s", hold)
	}
}
