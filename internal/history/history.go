// Package history checks the answers buyers recorded for linearizability: could one stock
// counter, taking one sale at a time, have given them? It trusts nothing the service counts in
// Redis, only the stock a run set and what each buyer was told, checked with porcupine, and
// draws a violation as a page a learner can read. The lab's rows, seckill explore, seckill load
// and the dashboard's timelines all use it.
package history

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The verdicts of a check.
const (
	Linearizable    = "linearizable"
	NotLinearizable = "NOT linearizable"
	Timeout         = "unknown (timeout)"
)

// Sale is one buyer's sale as it recorded it: when it called, when it was answered, and what
// it was told.
type Sale struct {
	// Instance names who served it (shown beside the sale in the drawing).
	Instance string
	// Kind: sold, soldout, or anything else (timeout, crashed, lost, unavailable, stale, error):
	// an answer that does not say whether a unit was taken.
	Kind string
	// Remaining is the stock left after a sold answer, as the buyer was told.
	Remaining  int64
	Start, End time.Time
}

// historyTimeout bounds one check, so the lab never hangs on a large history.
const historyTimeout = 5 * time.Second

// saleOutput is what a buyer was told.
type saleOutput struct {
	// Kind: sold, soldout, or anything else: the sale may or may not have happened.
	Kind string
	// Remaining is the stock left after a sold answer.
	Remaining int64
}

// known reports whether the answer says what the sale did: sold (one unit) or sold out (none).
// Any other answer (timeout, crashed, lost, unavailable, stale, refused, error) may or may not
// have taken a unit.
func (o saleOutput) known() bool { return o.Kind == "sold" || o.Kind == "soldout" }

// stockModel is a stock counter. A sold answer with remaining r is legal iff stock > 0 and
// r == stock-1 (the new stock); a sold-out answer iff stock == 0; any other answer either took
// one unit (when there was one) or none.
var stockModel = porcupine.NondeterministicModel{
	Step: func(state, _, output any) []any {
		s, o := state.(int64), output.(saleOutput)
		switch o.Kind {
		case "sold":
			if s > 0 && o.Remaining == s-1 {
				return []any{s - 1}
			}
			return nil
		case "soldout":
			if s == 0 {
				return []any{s}
			}
			return nil
		default:
			if s > 0 {
				return []any{s, s - 1}
			}
			return []any{s}
		}
	},
	Hash: func(state any) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(_, output any) string {
		o := output.(saleOutput)
		switch o.Kind {
		case "sold":
			return fmt.Sprintf("sold, %d left", o.Remaining)
		case "soldout":
			return "sold out"
		default:
			return o.Kind + " (sold or not)"
		}
	},
	DescribeState: func(state any) string { return fmt.Sprintf("stock %d", state.(int64)) },
	DescribeOperationMetadata: func(info any) string {
		if s, ok := info.(string); ok {
			return s
		}
		return ""
	},
}

// modelFrom is stockModel starting at the initial stock.
func modelFrom(initial int64) porcupine.Model {
	m := stockModel
	m.Init = func() []any { return []any{initial} }
	return m.ToModel()
}

// historyOps turns outcomes into porcupine operations, times in nanoseconds since origin (the
// monotonic clock: time.Time.Sub). An answer that does not say what the sale did returns after
// every other event of the history: that lets the checker place its effect (or none) anywhere
// after its call, as an infinite return time would, and keeps the visualisation readable.
func historyOps(origin time.Time, outs []Sale) []porcupine.Operation {
	ops := make([]porcupine.Operation, len(outs))
	var last int64
	for i, o := range outs {
		ops[i] = porcupine.Operation{ClientId: i, Call: int64(o.Start.Sub(origin)), Return: int64(o.End.Sub(origin)),
			Output: saleOutput{Kind: o.Kind, Remaining: o.Remaining}, Metadata: o.Instance}
		last = max(last, ops[i].Return)
	}
	for i := range ops {
		if !ops[i].Output.(saleOutput).known() {
			ops[i].Return = last + 1
		}
	}
	return ops
}

// modelFromAny is stockModel starting at any stock from 0 to initial: a part of a history,
// whose sales before it are left out, checked on its own.
func modelFromAny(initial int64) porcupine.Model {
	m := stockModel
	m.Init = func() []any {
		states := make([]any, 0, initial+1)
		for s := initial; s >= 0; s-- {
			states = append(states, s)
		}
		return states
	}
	return m.ToModel()
}

// witness finds the smallest part of a history that no stock counter starting at or below
// initial can explain, by two rules that need no search: a sale told a stock left that the
// counter can never show (below 0, or not below initial), or two sales told the same stock left
// (the counter only goes down, so each unit sold leaves a different figure). nil: neither rule
// applies, and only the full search can tell. An oversold history always has such a part, so
// the search, which must try every order of a crowd of overlapping sales before it may say no,
// is needed only to prove the histories that are linearizable, or fail in subtler ways.
func witness(initial int64, ops []porcupine.Operation) []porcupine.Operation {
	seen := map[int64]int{}
	for i, op := range ops {
		o := op.Output.(saleOutput)
		if o.Kind != "sold" {
			continue
		}
		if o.Remaining < 0 || o.Remaining >= initial {
			return []porcupine.Operation{op}
		}
		if j, dup := seen[o.Remaining]; dup {
			return []porcupine.Operation{ops[j], op}
		}
		seen[o.Remaining] = i
	}
	return nil
}

// Source says where a history comes from, for the header of its drawing.
type Source struct {
	// Name is part of the drawing's file name (seckill-history-NAME-*.html).
	Name string
	// Title is the page's title and heading.
	Title string
	// Kind names what ran ("Scenario", "Load run"), About says which, in plain text.
	Kind, About string
	// Mode is the lock mode of the sales ("" when not known).
	Mode string
	// Expect is what the run expected to see (optional).
	Expect string
}

// Check checks the outcomes of sales on one SKU whose stock was set to initial, times
// measured from origin. It returns the verdict and, for a violation, porcupine's
// visualisation under a header saying where it comes from (src), written to a file in dir (the
// OS temp dir when empty); file is "" otherwise. Where a small part of the history already
// fails on its own (witness), that part is what porcupine checks and draws; otherwise the
// whole history. Verdict is the same check without the file, Page the same
// check with the page in memory.
func Check(src Source, initial int64, origin time.Time, outs []Sale, dir string) (verdict, file string, err error) {
	verdict, page, err := Page(src, initial, origin, outs)
	if err != nil || page == nil {
		return verdict, "", err
	}
	file, err = WriteFile(dir, src.Name, page)
	return verdict, file, err
}

// Page is Check's check with the page kept in memory: the verdict and, for a
// violation, the page Check would write (nil otherwise).
func Page(src Source, initial int64, origin time.Time, outs []Sale) (verdict string, page []byte, err error) {
	ops := historyOps(origin, outs)
	model, checked := modelFrom(initial), ops
	if part := witness(initial, ops); part != nil {
		model, checked = modelFromAny(initial), part
	}
	res, info := porcupine.CheckOperationsVerbose(model, checked, historyTimeout)
	switch res {
	case porcupine.Ok:
		return Linearizable, nil, nil
	case porcupine.Unknown:
		return Timeout, nil, nil
	}
	var buf bytes.Buffer
	if err := porcupine.Visualize(model, info, &buf); err != nil {
		return NotLinearizable, nil, fmt.Errorf("history: visualisation: %w", err)
	}
	return NotLinearizable, withHeader(buf.Bytes(), src, len(checked), len(ops)), nil
}

// WriteFile writes a history's page to a new file seckill-history-NAME-*.html in dir (the
// OS temp dir when empty; created when missing) and returns its name.
func WriteFile(dir, name string, page []byte) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("history: visualisation: %w", err)
	}
	f, err := os.CreateTemp(dir, "seckill-history-"+name+"-*.html")
	if err != nil {
		return "", fmt.Errorf("history: visualisation: %w", err)
	}
	_, err = f.Write(page)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("history: visualisation %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// withHeader gives porcupine's page (which is titled "Porcupine" and opens on its drawing) a
// title, where the history comes from and a legend a learner can read: what a bar is, what the
// colours mean and why the drawing proves the bug. shown of total sales are drawn.
func withHeader(page []byte, src Source, shown, total int) []byte {
	part := fmt.Sprintf("the run's %d sales, all of them", total)
	if shown < total {
		part = fmt.Sprintf("%d of the run's %d sales: the smallest part that fails on its own", shown, total)
	}
	what := fmt.Sprintf("<b>%s</b> %s", html.EscapeString(src.Kind), html.EscapeString(src.About))
	if src.Mode != "" {
		what += fmt.Sprintf(", lock mode <code>%s</code>", html.EscapeString(src.Mode))
	}
	if src.Expect != "" {
		what += ": " + html.EscapeString(src.Expect)
	}
	// porcupine's own legend is fixed at the top of the window: the header starts below it.
	header := fmt.Sprintf(`<header style="font:14px/1.45 system-ui,sans-serif;max-width:60em;margin:0;padding-top:40px">
<h1 style="font-size:20px;margin:.2em 0">%s</h1>
<p>%s</p>
<p><b>What is drawn</b>: %s, as the buyers recorded them, checked by
<a href="https://github.com/anishathalye/porcupine">porcupine</a> against one stock counter that starts at the
stock the run set. Each bar is one sale, from its call (left end) to its answer (right end), time running
left to right; its label is what the buyer was told: &ldquo;sold, N left&rdquo;, &ldquo;sold out&rdquo;, or an
answer that does not say whether a unit was taken.</p>
<p><b>How to read it</b>: a linearization point (LP) is the instant a sale could have taken effect on the counter.
Grey marks (&ldquo;Valid LP&rdquo;) are the longest order of sales the checker could explain; the red mark
(&ldquo;Invalid LP&rdquo;) is the first sale it could not place, whatever the order. Hover over a bar (click to
pin it) to see the stock before and after it. A counter tells each &ldquo;N left&rdquo; once: two buyers told the same figure, or a figure
the counter cannot reach, is the oversell or lost update the counters report.</p>
</header>
`, html.EscapeString(src.Title), what, part)
	out := strings.Replace(string(page), "<title>Porcupine</title>", "<title>"+html.EscapeString(src.Title)+"</title>", 1)
	if i := strings.Index(out, "<body>"); i >= 0 {
		i += len("<body>")
		out = out[:i] + "\n" + header + out[i:]
	}
	return []byte(out)
}

// Verdict is Check's verdict without writing anything: for callers that check many
// histories (seckill explore) and draw only the ones they keep.
func Verdict(initial int64, origin time.Time, outs []Sale) string {
	ops := historyOps(origin, outs)
	model, checked := modelFrom(initial), ops
	if part := witness(initial, ops); part != nil {
		model, checked = modelFromAny(initial), part
	}
	switch porcupine.CheckOperationsTimeout(model, checked, historyTimeout) {
	case porcupine.Ok:
		return Linearizable
	case porcupine.Unknown:
		return Timeout
	}
	return NotLinearizable
}

// WriteHTML writes porcupine's visualisation of the whole history to w, whatever its
// verdict (the lab's timeline of one run), under src's title and header, and returns the verdict.
func WriteHTML(w io.Writer, src Source, initial int64, origin time.Time, outs []Sale) (string, error) {
	model := modelFrom(initial)
	res, info := porcupine.CheckOperationsVerbose(model, historyOps(origin, outs), historyTimeout)
	verdict := NotLinearizable
	switch res {
	case porcupine.Ok:
		verdict = Linearizable
	case porcupine.Unknown:
		verdict = Timeout
	}
	var buf bytes.Buffer
	if err := porcupine.Visualize(model, info, &buf); err != nil {
		return verdict, fmt.Errorf("history: visualisation: %w", err)
	}
	if _, err := w.Write(withHeader(buf.Bytes(), src, len(outs), len(outs))); err != nil {
		return verdict, fmt.Errorf("history: visualisation: %w", err)
	}
	return verdict, nil
}
