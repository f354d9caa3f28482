package benchreport

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteHTML draws the report as one self-contained page (inline SVG and CSS, no script, no
// request to anything): for each instance count of the run, sales/s of every strategy at every
// crowd size, and for each crowd size the distribution of waits (a CDF on a log axis) and the
// sales of each buyer. Every figure is drawn from the report's own cells; a cell without wait
// quantiles or per-buyer sales (a report written before they were kept) is left out of those
// figures, and the page says so.
func WriteHTML(w io.Writer, rep Report) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := "seckill bench"
	if !rep.Started.IsZero() {
		title += ", " + rep.Started.Format("2006-01-02 15:04")
	}
	p("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<style>%s</style></head><body>\n", esc(title), pageCSS)
	p("<h1>%s</h1>\n", esc(title))
	rtt := rep.Redis.RTT
	p("<p class=\"setup\">%d CPU (%s), %s/%s, %s; Redis: %s %s (data + 3 masters), PING round trip median %.1f µs.<br>",
		rep.Machine.CPUs, esc(rep.Machine.CPU), esc(rep.Machine.OS), esc(rep.Machine.Arch), esc(rep.Machine.Go),
		esc(rep.Redis.Kind), esc(rep.Redis.Version), float64(rtt.Median.Nanoseconds())/1000)
	p("Each cell: %d ms measured in %d rounds after %d ms of warm-up each, lease %d ms, one key, buyers in a closed loop; %.0f s in all. ",
		rep.DurationMs, rep.Rounds, rep.WarmupMs, rep.LeaseMs, float64(rep.ElapsedMs)/1000)
	p("Every figure is from this one run: compare strategies within it, not with another machine's run. " +
		"<b>Modes</b> are this service's locks; <i class=\"ref\">references</i> are the peers (redsync, bsm/redislock, a spin tryLock) run the same way.</p>\n")
	if len(rep.Cells) == 0 {
		p("<p>This run has no cells.</p>\n</body></html>\n")
		_, err := io.WriteString(w, b.String())
		return err
	}

	colors := strategyColors(rep.Cells)
	for _, inst := range instanceCounts(rep.Cells) {
		cells := slices.DeleteFunc(slices.Clone(rep.Cells), func(c Cell) bool { return max(c.Instances, 1) != inst })
		word := "instances"
		if inst == 1 {
			word = "instance"
		}
		p("<section class=\"instances\" data-instances=\"%d\">\n<h2>On %d %s</h2>\n", inst, inst, word)
		p("<figure class=\"rate\" data-instances=\"%d\">\n<figcaption>Sales per second of each strategy, by crowd size (buyers at once on one key), on %d %s.</figcaption>\n",
			inst, inst, word)
		drawRates(&b, cells)
		p("</figure>\n")
		for _, n := range buyerCounts(cells) {
			at := slices.DeleteFunc(slices.Clone(cells), func(c Cell) bool { return c.Buyers != n })
			p("<div class=\"pair\">\n<figure class=\"cdf\" data-instances=\"%d\" data-buyers=\"%d\">\n", inst, n)
			p("<figcaption>Waits at %s on %d %s: the share of attempts (sold or not) that waited at most x ms, x on a log scale. "+
				"Further left is shorter; a line that reaches 1 late has a long tail.</figcaption>\n", plural(n, "buyer"), inst, word)
			drawCDF(&b, at, colors, rep.WaitQuantileP)
			p("</figure>\n")
			if n > 1 {
				p("<figure class=\"buyers\" data-instances=\"%d\" data-buyers=\"%d\">\n", inst, n)
				p("<figcaption>Sales of each of the %d buyers on %d %s, most first, each row scaled to its own busiest buyer; "+
					"the dashed line is the fair share (the mean). Flat is fair; a steep fall, or buyers at 0, is not.</figcaption>\n", n, inst, word)
				drawBuyers(&b, at, colors)
				p("</figure>\n")
			}
			p("</div>\n")
		}
		p("</section>\n")
	}
	p("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

const pageCSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1900px}
h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ccc}
.setup{color:#444;max-width:1100px}figure{margin:10px 0 18px}figcaption{color:#333;margin-bottom:4px;max-width:900px}
.pair{display:flex;flex-wrap:wrap;gap:12px 28px}.pair figcaption{max-width:620px}.pair figure{flex:0 0 auto}
svg text{font:12px system-ui,sans-serif;fill:#222}svg .axis{stroke:#999;stroke-width:1}svg .grid{stroke:#e4e4e4;stroke-width:1}
svg text.ref,.ref{fill:#777;color:#777;font-style:italic}svg .note{fill:#666}`

// palette gives each strategy its colour, the same in every figure.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
	"#17becf", "#bcbd22", "#ff7f0e", "#7f7f7f", "#393b79", "#637939", "#843c39", "#7b4173"}

// crowdColors colour the bars of each crowd size in the sales/s figure.
var crowdColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"}

func esc(s string) string { return html.EscapeString(s) }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func strategyColors(cells []Cell) map[string]string {
	m := map[string]string{}
	for _, c := range cells {
		if _, ok := m[c.Strategy]; !ok {
			m[c.Strategy] = palette[len(m)%len(palette)]
		}
	}
	return m
}

func instanceCounts(cells []Cell) []int {
	var out []int
	for _, c := range cells {
		out = append(out, max(c.Instances, 1))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func buyerCounts(cells []Cell) []int {
	var out []int
	for _, c := range cells {
		out = append(out, c.Buyers)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// strategyOrder lists the strategies of cells in the report's order.
func strategyOrder(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		if !slices.Contains(out, c.Strategy) {
			out = append(out, c.Strategy)
		}
	}
	return out
}

func isRef(c Cell) bool { return c.Kind == "reference" }

// label draws a strategy's name, references in grey italics.
func label(b *strings.Builder, x, y float64, anchor string, c Cell) {
	class := ""
	if isRef(c) {
		class = ` class="ref"`
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, class, esc(c.Strategy))
}

// drawRates draws horizontal bars: one group per strategy, one bar per crowd size.
func drawRates(b *strings.Builder, cells []Cell) {
	names, crowds := strategyOrder(cells), buyerCounts(cells)
	const left, barW, bar, gap, top = 150.0, 560.0, 11.0, 10.0, 28.0
	maxRate := 0.0
	for _, c := range cells {
		maxRate = max(maxRate, c.Rate)
	}
	group := float64(len(crowds))*bar + gap
	height := top + float64(len(names))*group + 28
	width := left + barW + 90
	fmt.Fprintf(b, `<svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img">`+"\n", width, height, width, height)
	for i, n := range crowds {
		fmt.Fprintf(b, `<rect x="%.0f" y="6" width="12" height="12" fill="%s"/><text x="%.0f" y="16">%s</text>`+"\n",
			left+float64(i)*100, crowdColors[i%len(crowdColors)], left+float64(i)*100+16, plural(n, "buyer"))
	}
	step, ticks := niceTicks(maxRate)
	scale := 0.0
	if ticks > 0 {
		scale = barW / (step * float64(ticks))
	}
	for t := 0; t <= ticks; t++ {
		x := left + float64(t)*step*scale
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle" class="note">%s</text>`+"\n",
			x, top-2, x, height-24, x, height-10, fmtNum(float64(t)*step))
	}
	for i, name := range names {
		y := top + float64(i)*group
		for j, n := range crowds {
			k := slices.IndexFunc(cells, func(c Cell) bool { return c.Strategy == name && c.Buyers == n })
			if k < 0 {
				continue
			}
			c := cells[k]
			if j == 0 {
				label(b, left-8, y+float64(len(crowds))*bar/2+4, "end", c)
			}
			by := y + float64(j)*bar
			fmt.Fprintf(b, `<rect class="bar" data-strategy="%s" data-buyers="%d" data-rate="%.1f" x="%.1f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s, %d buyers: %.0f sales/s, p99 %.2f ms</title></rect>`+"\n",
				esc(name), n, c.Rate, left, by, c.Rate*scale, bar-1, crowdColors[j%len(crowdColors)], esc(name), n, c.Rate, c.P99Ms)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="note">%.0f</text>`+"\n", left+c.Rate*scale+4, by+bar-2, c.Rate)
		}
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="note">sales/s</text>`+"\n", left+barW+40, height-10)
	b.WriteString("</svg>\n")
}

// drawCDF draws each strategy's wait distribution as a step line on a log x axis.
func drawCDF(b *strings.Builder, cells []Cell, colors map[string]string, ps []float64) {
	const left, plotW, top, plotH, legendW = 46.0, 440.0, 12.0, 280.0, 410.0
	var drawn []Cell
	lo, hi := math.Inf(1), 0.0
	for _, c := range cells {
		if len(c.WaitQuantilesMs) == 0 || len(c.WaitQuantilesMs) != len(ps) {
			continue
		}
		drawn = append(drawn, c)
		for _, v := range c.WaitQuantilesMs {
			if v > 0 {
				lo = min(lo, v)
			}
			hi = max(hi, v)
		}
	}
	width, height := left+plotW+20+legendW, top+plotH+40
	height = max(height, top+float64(len(cells))*18+20)
	fmt.Fprintf(b, `<svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img">`+"\n", width, height, width, height)
	if len(drawn) == 0 {
		fmt.Fprintf(b, `<text x="%.0f" y="40">no wait distribution in this report (it was written before bench kept one)</text></svg>`+"\n", left)
		return
	}
	// Decades from the shortest to the longest wait (at least one); waits of 0 (under a
	// microsecond) sit on the axis's left end.
	if math.IsInf(lo, 1) {
		lo = 0.001
	}
	hi = max(hi, lo)
	d0 := math.Floor(math.Log10(lo))
	d1 := max(math.Ceil(math.Log10(hi)), d0+1)
	x := func(ms float64) float64 {
		if ms <= 0 {
			return left
		}
		return left + (math.Log10(ms)-d0)/(d1-d0)*plotW
	}
	y := func(p float64) float64 { return top + (1-p)*plotH }
	for d := d0; d <= d1; d++ {
		xx := x(math.Pow(10, d))
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle" class="note">%s</text>`+"\n",
			xx, top, xx, top+plotH, xx, top+plotH+16, fmtMs(math.Pow(10, d)))
	}
	for _, p := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="end" class="note">%g</text>`+"\n",
			left, y(p), left+plotW, y(p), left-4, y(p)+4, p)
	}
	fmt.Fprintf(b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="note">wait, ms (log scale)</text>`+"\n", left+plotW/2, top+plotH+34)
	for i, c := range drawn {
		var path strings.Builder
		for k, v := range c.WaitQuantilesMs {
			xx := x(max(v, math.Pow(10, d0)))
			if k == 0 {
				fmt.Fprintf(&path, "M%.1f %.1f", xx, y(0))
			} else {
				fmt.Fprintf(&path, "H%.1f", xx)
			}
			fmt.Fprintf(&path, "V%.1f", y(ps[k]))
		}
		dash := ""
		if isRef(c) {
			dash = ` stroke-dasharray="5 3"`
		}
		col := colors[c.Strategy]
		fmt.Fprintf(b, `<path class="cdf-line" data-strategy="%s" data-p50="%.3f" data-p99="%.3f" d="%s" fill="none" stroke="%s" stroke-width="1.8"%s><title>%s: p50 %.2f ms, p99 %.2f ms, longest %.2f ms</title></path>`+"\n",
			esc(c.Strategy), c.P50Ms, c.P99Ms, path.String(), col, dash, esc(c.Strategy), c.P50Ms, c.P99Ms, c.MaxMs)
		ly := top + 8 + float64(i)*18
		lx := left + plotW + 20
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", lx, ly, lx+22, ly, col, dash)
		label(b, lx+28, ly+4, "start", c)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="note">p50 %s · p99 %s · max %s</text>`+"\n", lx+135, ly+4, fmtMs(c.P50Ms), fmtMs(c.P99Ms), fmtMs(c.MaxMs))
	}
	b.WriteString("</svg>\n")
}

// drawBuyers draws, per strategy, the sales of each buyer sorted most first as an area scaled to
// its busiest buyer, with the fair share dashed, Jain's index and the starved buyers beside it.
func drawBuyers(b *strings.Builder, cells []Cell, colors map[string]string) {
	const left, rowW, rowH, gap, top = 130.0, 300.0, 30.0, 8.0, 6.0
	var drawn []Cell
	for _, c := range cells {
		if len(c.SalesPerBuyer) > 0 {
			drawn = append(drawn, c)
		}
	}
	width := left + rowW + 270
	height := top + float64(max(len(drawn), 1))*(rowH+gap) + 4
	fmt.Fprintf(b, `<svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img">`+"\n", width, height, width, height)
	if len(drawn) == 0 {
		fmt.Fprintf(b, `<text x="%.0f" y="20">no sales per buyer in this report (it was written before bench kept them)</text></svg>`+"\n", left)
		return
	}
	for i, c := range drawn {
		y0 := top + float64(i)*(rowH+gap)
		sales := slices.SortedFunc(slices.Values(c.SalesPerBuyer), func(a, b int) int { return cmp.Compare(b, a) })
		most := sales[0]
		total := 0
		for _, s := range sales {
			total += s
		}
		label(b, left-8, y0+rowH/2+4, "end", c)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f4f4f4"/>`+"\n", left, y0, rowW, rowH)
		if most > 0 {
			n := float64(len(sales))
			var pts strings.Builder
			fmt.Fprintf(&pts, "%.1f,%.1f", left, y0+rowH)
			for k, s := range sales {
				h := float64(s) / float64(most) * rowH
				fmt.Fprintf(&pts, " %.1f,%.1f %.1f,%.1f", left+float64(k)/n*rowW, y0+rowH-h, left+float64(k+1)/n*rowW, y0+rowH-h)
			}
			fmt.Fprintf(&pts, " %.1f,%.1f", left+rowW, y0+rowH)
			fmt.Fprintf(b, `<polygon class="buyer-area" data-strategy="%s" data-buyers="%d" points="%s" fill="%s" fill-opacity="0.75"><title>%s: %d buyers sold %d; most %d, least %d</title></polygon>`+"\n",
				esc(c.Strategy), len(sales), pts.String(), colors[c.Strategy], esc(c.Strategy), len(sales), total, most, sales[len(sales)-1])
			fair := float64(total) / n / float64(most) * rowH
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-dasharray="4 3"/>`+"\n", left, y0+rowH-fair, left+rowW, y0+rowH-fair)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="note">Jain %.3f · starved %d · most %d, least %d</text>`+"\n",
			left+rowW+8, y0+rowH/2+4, c.Jain, c.Starved, most, sales[len(sales)-1])
	}
	b.WriteString("</svg>\n")
}

// niceTicks divides 0..v into at most about 6 steps of 1, 2 or 5 × 10^k.
func niceTicks(v float64) (step float64, n int) {
	if v <= 0 {
		return 1, 1
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return step, int(math.Ceil(v / step))
}

func fmtNum(v float64) string {
	if v >= 1000 && math.Mod(v, 1000) == 0 {
		return fmt.Sprintf("%gk", v/1000)
	}
	return fmt.Sprintf("%g", v)
}

// fmtMs writes a wait in ms with as many digits as it needs.
func fmtMs(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.3g s", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.3g ms", ms)
	}
}

// LastRunPath is where `seckill bench` keeps its last report for the dashboard's /bench page:
// $XDG_CACHE_HOME/seckill/bench-last.json, else $HOME/.cache/seckill/bench-last.json; "" when
// getenv knows neither (then nothing is kept).
func LastRunPath(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "seckill", "bench-last.json")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "seckill", "bench-last.json")
	}
	return ""
}

// KeepLastRun writes rep as JSON to path (LastRunPath), making its directory.
func KeepLastRun(path string, rep Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: keep the last run: %w", err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		return err
	}
	// Written aside and renamed, so the dashboard never reads half a report.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench: keep the last run: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("bench: keep the last run: %w", err)
	}
	return nil
}

// LoadRun reads a report written as JSON (KeepLastRun, or --json).
func LoadRun(path string) (Report, error) {
	var rep Report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("bench: %s is not a bench report: %w", path, err)
	}
	return rep, nil
}
