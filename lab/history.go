package lab

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"

	"seckill/internal/history"
)

// The second verdict of a row: the history its buyers recorded (when each sale was called, when
// it answered, and what it answered) checked for linearizability against a stock counter
// (package history). It trusts nothing the service counts in Redis: only the stock the scenario
// set and the answers the buyers got.

// History verdicts (Result.History; "n/a: <reason>" when the history is not well defined).
const (
	Linearizable    = history.Linearizable
	NotLinearizable = history.NotLinearizable
	HistoryTimeout  = history.Timeout
)

// Sales are outs as the history checker reads them.
func Sales(outs []Outcome) []history.Sale {
	sales := make([]history.Sale, len(outs))
	for i, o := range outs {
		sales[i] = history.Sale{Instance: o.Instance, Kind: o.Kind, Remaining: o.Remaining, Start: o.Start, End: o.End}
	}
	return sales
}

// ScenarioHistory is the source of a lab scenario's history: its row, step, mode and what it
// expects. A name that is no scenario (a test's hand-made history) is named as it is.
func ScenarioHistory(name string) history.Source {
	sc, err := Lookup(name)
	if err != nil {
		return history.Source{Name: name, Title: "seckill: the sales no stock counter can explain (" + name + ")",
			Kind: "History", About: name}
	}
	return history.Source{Name: sc.Name,
		Title: fmt.Sprintf("seckill lab, row %d %s: the sales no stock counter can explain", sc.Row, sc.Name),
		Kind:  "Scenario", About: fmt.Sprintf("%s (row %d of docs/lab.md, %s)", sc.Name, sc.Row, sc.Step),
		Mode: sc.Mode, Expect: sc.Expect}
}

// checkHistory is the row's history verdict: the main fleet's sales on e.SKU, from the stock the
// scenario set once. A history that is not well defined (no stock set, set twice, a sale
// recorded without times) is "n/a" with the reason.
func (e *Env) checkHistory() {
	e.mu.Lock()
	outs := append([]Outcome(nil), e.outcomes...)
	stocks := append([]int64(nil), e.stocks...)
	e.mu.Unlock()
	na := ""
	switch {
	case e.Scenario.Library:
		na = "the row sells nothing: it drives the library's " + e.Scenario.Mode + " directly"
	case len(stocks) == 0:
		na = "the main SKU's stock was never set"
	case len(stocks) > 1:
		na = fmt.Sprintf("the main SKU's stock was set %d times", len(stocks))
	case len(outs) == 0:
		na = "no sales on the main SKU"
	}
	for _, o := range outs {
		if na == "" && (o.Start.IsZero() || o.End.IsZero()) {
			na = "a sale was recorded without its times"
		}
	}
	if na != "" {
		e.res.History = "n/a: " + na
		e.Note("history: not checked: %s", na)
		return
	}
	verdict, page, err := history.Page(ScenarioHistory(e.Scenario.Name), stocks[0], e.origin, Sales(outs))
	e.res.History = verdict
	e.Note("history: the %d answers the buyers recorded, from stock %d, are %s (porcupine)", len(outs), stocks[0], verdict)
	if err != nil {
		e.Note("history: %v", err)
		return
	}
	if page == nil {
		return
	}
	e.keepPage(page)
	if e.runner.NoHistoryFiles {
		e.Note("history: no file is written (--history-dir DIR keeps it in a file)")
		return
	}
	file, err := history.WriteFile(e.runner.HistoryDir, e.Scenario.Name, page)
	if err != nil {
		e.Note("history: %v", err)
		return
	}
	e.res.HistoryFile = file
	e.Note("history: visualisation in %s", file)
}

// MaxKeptHistory bounds the drawing of a failing history kept in the data Redis with the run
// (gzip-compressed, as it is kept): a larger one is not kept, and the run says so. The nine
// failing rows of a full lab run drew 33.8-33.9 KB each, 9.8-9.9 KB compressed (porcupine draws
// the smallest failing part: one or two sales, under the page's own script).
const MaxKeptHistory = 256 << 10

// keepPage compresses the drawing of the run's failing history to be kept with the run in the
// data Redis (record), when there is one and it fits MaxKeptHistory.
func (e *Env) keepPage(page []byte) {
	if e.runner.Data == nil {
		return
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(page)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		e.Note("history: its drawing is not kept in Redis: compress: %v", err)
	case buf.Len() > MaxKeptHistory:
		e.Note("history: its drawing (%d bytes compressed) is over the %d kept in Redis: not kept there", buf.Len(), MaxKeptHistory)
	default:
		e.keptPage = buf.Bytes()
		e.res.HistoryKept = true
		e.Note("history: its drawing is kept in Redis with this run: GET /lab/scenarios/%s/history on any instance of the service",
			e.Scenario.Name)
	}
}

// historyShort is a history verdict for the table: "n/a" without its reason.
func historyShort(h string) string {
	if h == "" {
		return "-"
	}
	if rest, ok := strings.CutPrefix(h, "n/a"); ok && rest != "" {
		return "n/a"
	}
	return h
}
