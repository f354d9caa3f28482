package benchreport_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/bench"
	"seckill/internal/benchreport"
)

// chromium finds the browser: SECKILL_CHROMIUM, else Debian's chromium on PATH (as the
// dashboard's browser test does).
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
	t.Skip("chromium is not installed (apt-get install -y chromium, or set SECKILL_CHROMIUM): skipping the browser test of the bench page")
	return ""
}

// TestHTMLInChromium draws a real short run (a mode and a peer, 1 and 4 buyers, on 1 and 2
// instances) and opens the page from a file in headless Chromium: every figure is laid out,
// every CDF line has a length, the bars are as long as their rates say, and the page loaded
// nothing. A screenshot is kept for CI (artifacts/bench.png).
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis servers")
	}
	exe := chromium(t)
	t.Parallel()
	rep, err := bench.Run(t.Context(), bench.Options{Duration: 400 * time.Millisecond, Warmup: 50 * time.Millisecond, Rounds: 1,
		Concurrency: []int{1, 4}, Instances: []int{1, 2}, Strategies: []string{"lua", bench.RefRedislock10}, Lease: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := benchreport.WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "bench.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1600, 1200))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS("figure.buyers"))); err != nil {
		t.Fatalf("open the page: %v", err)
	}

	// Measured by the browser's own layout, not read back from the markup.
	type layout struct {
		Figures, EmptyFigures, CDFLines, ShortLines, Bars, Areas, Resources int
		WorstBarRatio                                                       float64
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[layout](`(() => {
		const figs = [...document.querySelectorAll('figure svg')];
		const lines = [...document.querySelectorAll('path.cdf-line')];
		let worst = 0;
		for (const svg of document.querySelectorAll('figure.rate svg')) {
			const bars = [...svg.querySelectorAll('rect.bar')].filter((r) => Number(r.dataset.rate) > 0);
			const per = bars.map((r) => r.getBoundingClientRect().width / Number(r.dataset.rate));
			const mid = per[0];
			for (const p of per) worst = Math.max(worst, Math.abs(p / mid - 1));
		}
		return {
			Figures: figs.length,
			EmptyFigures: figs.filter((s) => { const r = s.getBoundingClientRect(); return r.width < 100 || r.height < 40; }).length,
			CDFLines: lines.length,
			ShortLines: lines.filter((p) => p.getTotalLength() < 50).length,
			Bars: document.querySelectorAll('rect.bar').length,
			Areas: document.querySelectorAll('polygon.buyer-area').length,
			Resources: performance.getEntriesByType('resource').length,
			WorstBarRatio: worst,
		};
	})()`))
	if err != nil {
		t.Fatalf("measure the page: %v", err)
	}
	t.Logf("laid out: %+v", got)
	// 2 instance counts: a rate figure each, a CDF per crowd size (2), sales per buyer at 4 buyers.
	if got.Figures != 2+4+2 || got.EmptyFigures != 0 {
		t.Errorf("%d figures (%d laid out empty), want 8", got.Figures, got.EmptyFigures)
	}
	if got.CDFLines != 2*4 || got.ShortLines != 0 {
		t.Errorf("%d CDF lines (%d shorter than 50 px), want 2 strategies × 4 figures", got.CDFLines, got.ShortLines)
	}
	if got.Bars != 8 || got.Areas != 2*2 {
		t.Errorf("%d bars, %d buyer areas: want 8 and 4", got.Bars, got.Areas)
	}
	if got.WorstBarRatio > 0.02 {
		t.Errorf("a bar's drawn length is off its rate by %.1f %%", 100*got.WorstBarRatio)
	}
	if got.Resources != 0 {
		t.Errorf("the page loaded %d resources; it must load nothing", got.Resources)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("SECKILL_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "bench.png"), png, 0o644); err == nil {
			t.Logf("bench page screenshot: %s", filepath.Join(dir, "bench.png"))
		}
	}
}
