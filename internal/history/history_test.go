package history_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/internal/history"
)

// sale is one hand-made operation: called at from, answered at to (milliseconds since the
// origin), with kind and, for a sold answer, the stock left.
type sale struct {
	from, to  int
	kind      string
	remaining int64
}

func recorded(origin time.Time, sales []sale) []history.Sale {
	at := func(msec int) time.Time { return origin.Add(time.Duration(msec) * time.Millisecond) }
	out := make([]history.Sale, len(sales))
	for i, s := range sales {
		out[i] = history.Sale{Instance: "lab-A", Kind: s.kind, Remaining: s.remaining, Start: at(s.from), End: at(s.to)}
	}
	return out
}

// named is the source of a hand-made history, named as it is.
func named(name string) history.Source {
	return history.Source{Name: name, Title: "seckill: the sales no stock counter can explain (" + name + ")",
		Kind: "History", About: name}
}

// TestStockModel checks the history checker on hand-made histories of a stock counter.
func TestStockModel(t *testing.T) {
	cases := []struct {
		name    string
		initial int64
		sales   []sale
		want    string
	}{
		{"sequential sales, then sold out", 2,
			[]sale{{0, 1, "sold", 1}, {2, 3, "sold", 0}, {4, 5, "soldout", 0}}, history.Linearizable},
		{"concurrent sales, answers in either order", 10,
			[]sale{{0, 10, "sold", 8}, {1, 5, "sold", 9}}, history.Linearizable},
		{"oversell: a second sale of the last unit", 1,
			[]sale{{0, 1, "sold", 0}, {2, 3, "sold", -1}}, history.NotLinearizable},
		{"sold out while stock is left", 1,
			[]sale{{0, 1, "soldout", 0}}, history.NotLinearizable},
		{"lost update: two overlapping sales both leave 9 of 10", 10,
			[]sale{{0, 10, "sold", 9}, {1, 11, "sold", 9}}, history.NotLinearizable},
		{"a timeout that did not sell", 10,
			[]sale{{0, 1, "timeout", 0}, {2, 3, "sold", 9}}, history.Linearizable},
		{"a timeout that sold", 10,
			[]sale{{0, 1, "timeout", 0}, {2, 3, "sold", 8}}, history.Linearizable},
		{"a crash that took the last unit", 1,
			[]sale{{0, 1, "crashed", 0}, {2, 3, "soldout", 0}}, history.Linearizable},
		{"a timeout cannot sell before it was called", 10,
			[]sale{{0, 1, "sold", 8}, {2, 3, "timeout", 0}}, history.NotLinearizable},
		{"told a stock left that was never there", 10,
			[]sale{{0, 1, "sold", 10}}, history.NotLinearizable},
		{"a timeout cannot hide a lost update", 10,
			[]sale{{0, 1, "timeout", 0}, {2, 5, "sold", 8}, {3, 6, "sold", 8}}, history.NotLinearizable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			origin := time.Now()
			dir := t.TempDir()
			got, file, err := history.Check(named("unit"), c.initial, origin, recorded(origin, c.sales), dir)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			if (file != "") != (got == history.NotLinearizable) {
				t.Fatalf("visualisation file %q for a history that is %s", file, got)
			}
			if file != "" {
				if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
					t.Fatalf("visualisation %s: %v", file, err)
				}
			}
		})
	}
}

// TestCrowdWithLostUpdates: 300 overlapping sales of 100 units with no lock, as the none mode
// makes them through nginx: many buyers are told the same stock left. Proving that no order of
// 300 overlapping operations explains that would take the search longer than its bound; the
// two sales told the same figure prove it alone, and that part is what is drawn.
func TestCrowdWithLostUpdates(t *testing.T) {
	origin := time.Now()
	var sales []sale
	for i := range 300 {
		// Everyone overlaps everyone; groups of three read the same stock.
		sales = append(sales, sale{i, 1000 + i, "sold", 99 - int64(i/3)})
	}
	got, file, err := history.Check(named("crowd"), 100, origin, recorded(origin, sales), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got != history.NotLinearizable || file == "" {
		t.Fatalf("got %s (visualisation %q), want NOT linearizable with its drawing", got, file)
	}
}

// TestHistoryPageOfALoadRun: a history that comes from no scenario (seckill load) has a header
// that says what ran, not an empty scenario's ("row 0 … (row 0 of docs/lab.md, ), lock mode :").
func TestHistoryPageOfALoadRun(t *testing.T) {
	t.Parallel()
	origin := time.Now()
	sales := []sale{{0, 10, "sold", 9}, {1, 11, "sold", 9}}
	src := history.Source{Name: "load-none", Title: "seckill load: the sales no stock counter can explain",
		Kind: "Load run", About: "40 sales, 20 at a time, on inventory001 through http://127.0.0.1:8080, from stock 10",
		Mode: "none"}
	got, file, err := history.Check(src, 10, origin, recorded(origin, sales), t.TempDir())
	if err != nil || got != history.NotLinearizable {
		t.Fatalf("got %s, %v; want NOT linearizable", got, err)
	}
	if !strings.Contains(file, "seckill-history-load-none-") {
		t.Errorf("file %s is not named after the run", file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<title>seckill load: the sales", "<b>Load run</b> 40 sales, 20 at a time",
		"http://127.0.0.1:8080", "lock mode <code>none</code>", "the run's 2 sales"} {
		if !strings.Contains(page, want) {
			t.Errorf("the history page lacks %q", want)
		}
	}
	for _, bad := range []string{"row 0", "docs/lab.md", ", )", "<code></code>", "</code>: </p>", "<b></b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the history page's header has %q, an empty scenario's", bad)
		}
	}
}

// TestWriteFileCreatesItsDirectory: --history-dir names a directory that need not exist yet.
func TestWriteFileCreatesItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "drawings", "load")
	file, err := history.WriteFile(dir, "load-none", []byte("<html></html>"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(file) != dir {
		t.Fatalf("written to %s, want into %s", file, dir)
	}
}
