package lab_test

import (
	"fmt"
	"html"
	"os"
	"strings"
	"testing"
	"time"

	"seckill/internal/history"
	"seckill/lab"
)

// historyAgrees requires a row's history verdict (the buyers' side alone) to agree with the
// counters the service kept in Redis: a lost update or an oversell must make the history NOT
// linearizable, and a row with neither must have a linearizable history.
func historyAgrees(t *testing.T, run int, res lab.Result) {
	t.Helper()
	if res.Verdict == lab.Skipped {
		return
	}
	if sc, err := lab.Lookup(res.Name); err == nil && sc.Library {
		// It drives a library kind and sells nothing: there is no history to check.
		if !strings.HasPrefix(res.History, "n/a: the row sells nothing") || res.Buyers != 0 {
			t.Errorf("run %d: %s: history %q with %d buyers, want n/a for a row that sells nothing", run, res.Name,
				res.History, res.Buyers)
		}
		return
	}
	want := lab.Linearizable
	if res.Lost > 0 || res.Oversold > 0 {
		want = lab.NotLinearizable
	}
	if res.History != want {
		t.Errorf("run %d: %s: history %q, but the counters (lost %d, oversold %d) say %s", run, res.Name,
			res.History, res.Lost, res.Oversold, want)
		return
	}
	if want == lab.NotLinearizable {
		if _, err := os.Stat(res.HistoryFile); err != nil {
			t.Errorf("run %d: %s: the visualisation of the violation: %v", run, res.Name, err)
		}
	}
}

// TestHistoryPageSaysWhatItShows: the visualisation of a violation is porcupine's drawing under
// a title, the scenario it comes from and a legend, so a learner who opens it from the dashboard
// knows what the bars are.
func TestHistoryPageSaysWhatItShows(t *testing.T) {
	sc, err := lab.Lookup("none")
	if err != nil {
		t.Fatal(err)
	}
	origin := time.Now()
	at := func(msec int) time.Time { return origin.Add(time.Duration(msec) * time.Millisecond) }
	outs := []lab.Outcome{{Instance: "lab-A", Kind: "sold", Remaining: 9, Start: at(0), End: at(10)},
		{Instance: "lab-A", Kind: "sold", Remaining: 9, Start: at(1), End: at(11)},
		{Instance: "lab-A", Kind: "sold", Remaining: 8, Start: at(12), End: at(13)}}
	got, file, err := history.Check(lab.ScenarioHistory(sc.Name), 10, origin, lab.Sales(outs), t.TempDir())
	if err != nil || got != lab.NotLinearizable {
		t.Fatalf("got %s, %v; want NOT linearizable", got, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	title := fmt.Sprintf("<title>seckill lab, row %d %s: ", sc.Row, sc.Name)
	for _, want := range []string{title, "<header", "lock mode <code>" + sc.Mode + "</code>", html.EscapeString(sc.Expect),
		"2 of the run's 3 sales", "Invalid LP", "const data ="} {
		if !strings.Contains(page, want) {
			t.Errorf("the history page lacks %q", want)
		}
	}
	if strings.Contains(page, "<title>Porcupine</title>") {
		t.Error("the history page still has porcupine's bare title")
	}
	if h, body := strings.Index(page, "<header"), strings.Index(page, "<body>"); h < body {
		t.Errorf("the header (at %d) is not inside the body (at %d)", h, body)
	}
}
