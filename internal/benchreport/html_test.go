package benchreport

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// drawnReport is a report with two instance counts, two crowd sizes, a mode and a reference,
// whose figures the page must show as given.
func drawnReport() Report {
	rep := Report{Started: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), WaitQuantileP: WaitQuantileP, DurationMs: 1000, Rounds: 1}
	rep.Redis.Kind = "redis-server"
	q := func(scale float64) []float64 {
		var out []float64
		for i := range WaitQuantileP {
			out = append(out, scale*float64(i+1))
		}
		return out
	}
	for _, inst := range []int{1, 16} {
		for _, n := range []int{1, 8} {
			per := make([]int, n)
			for i := range per {
				per[i] = 10 + i
			}
			rep.Cells = append(rep.Cells,
				Cell{Strategy: "lua", Kind: "mode", Instances: inst, Buyers: n, Rate: 2000, P50Ms: 0.5, P99Ms: 2, MaxMs: 3, Jain: 1,
					WaitQuantilesMs: q(0.01), SalesPerBuyer: per},
				Cell{Strategy: refRedislock10, Kind: "reference", Instances: inst, Buyers: n, Rate: 500, P50Ms: 1, P99Ms: 300, MaxMs: 900, Jain: 0.4, Starved: 1,
					WaitQuantilesMs: q(1), SalesPerBuyer: append([]int{0}, per[1:]...)})
		}
	}
	return rep
}

// TestHTMLDrawsEveryCell: one sales/s figure per instance count with a bar per cell, a CDF per
// instance count and crowd size with a line per strategy, the sales per buyer wherever there is
// more than one buyer; nothing loaded from anywhere.
func TestHTMLDrawsEveryCell(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteHTML(&b, drawnReport()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	count := func(s string) int { return strings.Count(page, s) }
	if n := count(`<figure class="rate"`); n != 2 {
		t.Errorf("%d sales/s figures, want one per instance count (2)", n)
	}
	if n := count(`<figure class="cdf"`); n != 4 {
		t.Errorf("%d CDF figures, want 2 instance counts × 2 crowd sizes", n)
	}
	if n := count(`<figure class="buyers"`); n != 2 {
		t.Errorf("%d sales-per-buyer figures, want 2 (8 buyers on 1 and on 16 instances; 1 buyer has no spread)", n)
	}
	if n := count(`class="cdf-line"`); n != 8 {
		t.Errorf("%d CDF lines, want 2 strategies × 4 figures", n)
	}
	if n := count(`class="buyer-area"`); n != 4 {
		t.Errorf("%d buyer areas, want 2 strategies × 2 figures", n)
	}
	// The bars are drawn to scale: lua's 2000 sales/s is four times redislock's 500.
	widths := map[string]float64{}
	for _, m := range regexp.MustCompile(`data-strategy="([^"]+)" data-buyers="8" data-rate="[^"]+" x="[^"]+" y="[^"]+" width="([0-9.]+)"`).FindAllStringSubmatch(page, -1) {
		w, _ := strconv.ParseFloat(m[2], 64)
		widths[m[1]] = w
	}
	if r := widths["lua"] / widths[refRedislock10]; r < 3.99 || r > 4.01 {
		t.Errorf("bar widths %v: lua ÷ redislock = %.3f, want 4", widths, r)
	}
	for _, s := range []string{"On 1 instance", "On 16 instances", "Waits at 8 buyers on 16 instances", "Jain 0.400 · starved 1", `class="ref"`} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	// Self-contained: no script, stylesheet, image or link to fetch.
	for _, s := range []string{"src=", "href=", "url(", "http:", "https:", "@import", "<script", "<link"} {
		if strings.Contains(page, s) {
			t.Errorf("the page refers outside itself (%q)", s)
		}
	}
}

// TestHTMLOfAReportWithoutDistributions: a report kept before the waits and the sales per buyer
// were (or an HTTP cell without them) is drawn with its rates and says what is missing.
func TestHTMLOfAReportWithoutDistributions(t *testing.T) {
	t.Parallel()
	rep := drawnReport()
	for i := range rep.Cells {
		rep.Cells[i].WaitQuantilesMs, rep.Cells[i].SalesPerBuyer = nil, nil
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Count(page, `class="bar"`) != 8 || strings.Contains(page, `class="cdf-line"`) ||
		!strings.Contains(page, "no wait distribution in this report") || !strings.Contains(page, "no sales per buyer in this report") {
		t.Errorf("want the rates drawn and the missing figures named:\n%s", page)
	}
	// Waits all under a microsecond (0 ms) still give an axis (this looped for ever once).
	rep = drawnReport()
	rep.Cells = rep.Cells[:1]
	rep.Cells[0].WaitQuantilesMs = make([]float64, len(WaitQuantileP))
	b.Reset()
	if err := WriteHTML(&b, rep); err != nil || !strings.Contains(b.String(), `class="cdf-line"`) {
		t.Errorf("zero waits: %v", err)
	}
	b.Reset()
	if err := WriteHTML(&b, Report{}); err != nil || !strings.Contains(b.String(), "no cells") {
		t.Errorf("an empty report: %v\n%s", err, b.String())
	}
}

func TestLastRunKeptAndLoaded(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if p := LastRunPath(env(map[string]string{"XDG_CACHE_HOME": "/c", "HOME": "/h"})); p != "/c/seckill/bench-last.json" {
		t.Errorf("with XDG_CACHE_HOME: %s", p)
	}
	if p := LastRunPath(env(map[string]string{"HOME": "/h"})); p != "/h/.cache/seckill/bench-last.json" {
		t.Errorf("with HOME only: %s", p)
	}
	if p := LastRunPath(env(nil)); p != "" {
		t.Errorf("with neither: %q, want nothing kept", p)
	}
	p := filepath.Join(t.TempDir(), "cache", "seckill", "bench-last.json")
	if err := KeepLastRun(p, drawnReport()); err != nil {
		t.Fatal(err)
	}
	back, err := LoadRun(p)
	if err != nil || len(back.Cells) != 8 || len(back.Cells[3].WaitQuantilesMs) != len(WaitQuantileP) {
		t.Fatalf("loaded %d cells (%v)", len(back.Cells), err)
	}
	if err := os.WriteFile(p, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRun(p); err == nil || !strings.Contains(err.Error(), "not a bench report") {
		t.Errorf("a broken file: %v", err)
	}
}

// refRedislock10 is the name bench gives bsm/redislock at a 10 ms retry (bench.RefRedislock10).
const refRedislock10 = "redislock-10ms"
