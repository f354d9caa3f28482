package handler_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/config"
	"seckill/handler"
	"seckill/internal/apptest"
	"seckill/internal/testredis"
	"seckill/lab"
	"seckill/lab/labhttp"
)

func TestLabScenariosAreListed(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	r := do(t, http.MethodGet, f.HTTP.URL+"/lab/scenarios", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /lab/scenarios: %d %s", r.status, r.raw)
	}
	var body struct {
		Enabled   bool           `json:"enabled"`
		Modes     []string       `json:"modes"`
		Scenarios []lab.Scenario `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
		t.Fatal(err)
	}
	if !body.Enabled || len(body.Modes) == 0 {
		t.Fatalf("want enabled with modes: %s", r.raw)
	}
	var names []string
	for _, sc := range body.Scenarios {
		names = append(names, sc.Name)
	}
	if strings.Join(names, ",") != strings.Join(lab.Names(), ",") {
		t.Fatalf("scenarios %v, want %v", names, lab.Names())
	}
}

func TestLabRunAnswersTheRow(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	for name, want := range map[string]string{"none": lab.Reproduced, "atomic": lab.Held} {
		r := do(t, http.MethodPost, f.HTTP.URL+"/lab/scenarios/"+name+"/run", nil)
		if r.status != http.StatusOK {
			t.Fatalf("run %s: %d %s", name, r.status, r.raw)
		}
		var res lab.Result
		if err := json.Unmarshal([]byte(r.raw), &res); err != nil {
			t.Fatal(err)
		}
		// A row the machine stalled in is STARVED whatever its checks said (the lab's own tests
		// judge the verdicts; this one, that the route answers the row).
		if res.Name != name || (res.Verdict != want && res.Verdict != lab.Starved) || len(res.Checks) == 0 || res.Sold == 0 {
			t.Fatalf("run %s: want verdict %s (or STARVED) with figures; got %s", name, want, r.raw)
		}
	}
	// The lab works on its own SKUs: the service's inventory is untouched.
	if inv := inventory(t, f); inv.Sold != 0 || inv.Stock != f.Cfg.Inventory.Stock {
		t.Fatalf("the lab touched %s: %+v", f.Cfg.Inventory.Key, inv)
	}
}

func TestLabRunUnknownIs404(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	r := do(t, http.MethodPost, f.HTTP.URL+"/lab/scenarios/no-such/run", nil)
	if r.status != http.StatusNotFound || !strings.Contains(r.raw, "no-such") {
		t.Fatalf("want 404 naming the scenario, got %d %s", r.status, r.raw)
	}
}

// TestLabRunsOneAtATime starts a scenario that takes over a second and requires 409 for every
// other experiment until it ends.
func TestLabRunsOneAtATime(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	first := make(chan resp, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, f.HTTP.URL+"/lab/scenarios/reentrant/run", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- resp{status: -1, raw: err.Error()}
			return
		}
		defer res.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, rerr := res.Body.Read(buf)
			b.Write(buf[:n])
			if rerr != nil {
				break
			}
		}
		first <- resp{status: res.StatusCode, raw: b.String()}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := do(t, http.MethodGet, f.HTTP.URL+"/lab/scenarios", nil)
		if running, _ := r.body["running"].(string); running != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first scenario never showed as running")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, path := range []string{"/lab/scenarios/none/run", "/lab/burst?n=5&lock=atomic"} {
		r := do(t, http.MethodPost, f.HTTP.URL+path, nil)
		if r.status != http.StatusConflict || !strings.Contains(r.raw, "reentrant") {
			t.Fatalf("POST %s while a scenario runs: want 409 naming it, got %d %s", path, r.status, r.raw)
		}
	}
	got := <-first
	// The run itself is judged by the lab's tests; here it must have run to its answer.
	if got.status != http.StatusOK || !strings.Contains(got.raw, `"name":"reentrant"`) || !strings.Contains(got.raw, `"verdict":`) {
		t.Fatalf("the first run: %d %s", got.status, got.raw)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/lab/scenarios/atomic/run", nil); r.status != http.StatusOK {
		t.Fatalf("after the first run ended: %d %s", r.status, r.raw)
	}
}

func TestLabDisabledIs403(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lab.Enabled = false })
	for _, path := range []string{"/lab/scenarios/none/run", "/lab/burst?n=5"} {
		r := do(t, http.MethodPost, f.HTTP.URL+path, nil)
		if r.status != http.StatusForbidden || !strings.Contains(r.raw, "lab.enabled") {
			t.Fatalf("POST %s with the lab disabled: want 403, got %d %s", path, r.status, r.raw)
		}
	}
	r := do(t, http.MethodGet, f.HTTP.URL+"/lab/scenarios", nil)
	if r.status != http.StatusOK || r.body["enabled"] != false {
		t.Fatalf("GET /lab/scenarios with the lab disabled: %d %s", r.status, r.raw)
	}
}

func TestLabNeedsTheAdminToken(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Server.AdminToken = "s3cret" })
	for _, path := range []string{"/lab/scenarios/none/run", "/lab/burst?n=5"} {
		if r := do(t, http.MethodPost, f.HTTP.URL+path, nil); r.status != http.StatusUnauthorized {
			t.Fatalf("POST %s without the token: want 401, got %d %s", path, r.status, r.raw)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, f.HTTP.URL+"/lab/burst?n=5&lock=atomic", nil)
	req.Header.Set("X-Admin-Token", "s3cret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("burst with the token: %d", res.StatusCode)
	}
}

func TestBurstSellsThroughTheService(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=50", nil); r.status != http.StatusOK {
		t.Fatalf("reset: %d %s", r.status, r.raw)
	}
	r := do(t, http.MethodPost, f.HTTP.URL+"/lab/burst?n=80&lock=atomic", nil)
	if r.status != http.StatusOK {
		t.Fatalf("burst: %d %s", r.status, r.raw)
	}
	var res lab.BurstResult
	if err := json.Unmarshal([]byte(r.raw), &res); err != nil {
		t.Fatal(err)
	}
	if res.N != 80 || res.Lock != "atomic" || res.Outcomes["sold"] != 50 || res.Outcomes["soldout"] != 30 {
		t.Fatalf("burst of 80 for 50 units: %s", r.raw)
	}
	sold, all := 0, 0
	for _, b := range res.Timeline {
		sold += b.Sold
		all += b.Sold + b.Failed
	}
	if sold != 50 || all != 80 || res.BucketMs <= 0 {
		t.Fatalf("timeline counts %d sold of %d answers (bucket %dms): %s", sold, all, res.BucketMs, r.raw)
	}
	if inv := inventory(t, f); inv.Sold != 50 || inv.Stock != 0 {
		t.Fatalf("inventory after the burst: %+v", inv)
	}

	// Without a lock and with business time, the burst shows the lost updates on the dashboard.
	do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=100", nil)
	r = do(t, http.MethodPost, f.HTTP.URL+"/lab/burst?n=30&lock=none&workMs=20", nil)
	if r.status != http.StatusOK {
		t.Fatalf("burst none: %d %s", r.status, r.raw)
	}
	if inv := inventory(t, f); inv.LostUpdates == 0 {
		t.Fatalf("30 unlocked buyers with 20ms business time lost no update: %+v", inv)
	}

	for _, q := range []string{"n=0", "n=5000", "n=x", "lock=nope", "workMs=-1", "n=5&lock=atomic&workMs=10", "bogus=1"} {
		if r := do(t, http.MethodPost, f.HTTP.URL+"/lab/burst?"+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("burst?%s: want 400, got %d %s", q, r.status, r.raw)
		}
	}
}

func TestDashboardIsServed(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	for path, ctype := range map[string]string{"/": "text/html", "/dashboard/dashboard.js": "javascript",
		"/dashboard/dashboard.css": "text/css"} {
		r := do(t, http.MethodGet, f.HTTP.URL+path, nil)
		if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Type"), ctype) {
			t.Fatalf("GET %s: %d %s", path, r.status, r.header.Get("Content-Type"))
		}
	}
	page := do(t, http.MethodGet, f.HTTP.URL+"/", nil).raw
	for _, s := range []string{"/dashboard/dashboard.js", "id=\"scenarios\"", "id=\"chart\""} {
		if !strings.Contains(page, s) {
			t.Fatalf("the page lacks %s", s)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Fatal("the page must not load anything from elsewhere (it works offline)")
	}
	for _, path := range []string{"/dashboard/", "/dashboard/nope.js", "/dashboard/../handler.go"} {
		if r := do(t, http.MethodGet, f.HTTP.URL+path, nil); r.status != http.StatusNotFound {
			t.Fatalf("GET %s: want 404, got %d", path, r.status)
		}
	}
}

// fakeLab is a LabRunner that answers a canned result and remembers what it ran.
type fakeLab struct {
	ran     []string
	history string // the HistoryFile its results name
}

func (f *fakeLab) Run(_ context.Context, sc lab.Scenario) lab.Result {
	f.ran = append(f.ran, sc.Name)
	res := lab.Result{Name: sc.Name, Row: sc.Row, Verdict: lab.Held, Reason: "from the fake", HistoryFile: f.history}
	if f.history != "" {
		res.Notes = []string{"history: visualisation in " + f.history} // as the lab notes it
	}
	return res
}

// TestFailingHistoryIsServed: after a run whose history was not linearizable, the dashboard's
// link serves the lab's visualisation; after a run that was, or before any run, 404.
func TestFailingHistoryIsServed(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	file := filepath.Join(t.TempDir(), "history.html")
	if err := os.WriteFile(file, []byte("<html>the failing part</html>"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := &fakeLab{}
	lb := labhttp.New(f.App.Service, fake, nil, nil)
	srv := httptest.NewServer(handler.New(f.App.Service, handler.Options{Mount: lb.Mount}))
	defer srv.Close()
	url := srv.URL + "/lab/scenarios/lua/history"
	if r := do(t, http.MethodGet, url, nil); r.status != http.StatusNotFound {
		t.Fatalf("before any run: %d %s", r.status, r.raw)
	}
	fake.history = file
	// The answer links the page the service serves, and names no path on the server.
	run := do(t, http.MethodPost, srv.URL+"/lab/scenarios/lua/run", nil)
	var res lab.Result
	if err := json.Unmarshal([]byte(run.raw), &res); err != nil {
		t.Fatal(err)
	}
	if res.HistoryURL != "/lab/scenarios/lua/history" || res.HistoryFile != "" || strings.Contains(run.raw, file) ||
		!strings.Contains(strings.Join(res.Notes, " "), res.HistoryURL) {
		t.Fatalf("run: want historyUrl and no file path; got %s", run.raw)
	}
	if last := lastRuns(t, srv.URL)["lua"]; last.HistoryURL != res.HistoryURL || last.HistoryFile != "" {
		t.Fatalf("GET /lab/scenarios: the last run of lua is %+v, want the same link", last)
	}
	r := do(t, http.MethodGet, srv.URL+res.HistoryURL, nil)
	if r.status != http.StatusOK || !strings.Contains(r.raw, "the failing part") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("after a failing run: %d %q %s", r.status, r.header.Get("Content-Type"), r.raw)
	}
	// A scenario that does not exist, or a name that tries to reach a file, is a 404 that says
	// so (a name with a slash in it matches no route at all).
	for name, want := range map[string]string{"no-such": "unknown scenario", "lua%00": "unknown scenario",
		"..%2F..%2Fetc%2Fpasswd": "no such endpoint"} {
		r := do(t, http.MethodGet, srv.URL+"/lab/scenarios/"+name+"/history", nil)
		if r.status != http.StatusNotFound || !strings.Contains(r.raw, want) {
			t.Fatalf("GET history of %q: want 404 %q, got %d %s", name, want, r.status, r.raw)
		}
	}
	// A scenario that exists but has no failing history here says so.
	if r := do(t, http.MethodGet, srv.URL+"/lab/scenarios/none/history", nil); r.status != http.StatusNotFound ||
		!strings.Contains(r.raw, "no failing history for scenario none") {
		t.Fatalf("GET history of none before it ran: %d %s", r.status, r.raw)
	}
	fake.history = ""
	do(t, http.MethodPost, srv.URL+"/lab/scenarios/lua/run", nil)
	if r := do(t, http.MethodGet, url, nil); r.status != http.StatusNotFound {
		t.Fatalf("after a linearizable run: %d %s", r.status, r.raw)
	}
	if last := lastRuns(t, srv.URL)["lua"]; last.HistoryURL != "" {
		t.Fatalf("after a linearizable run the last run still links %s", last.HistoryURL)
	}
	// The lab keeps one history file per scenario at most: the replaced one is gone.
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the replaced history file %s is still there: %v", file, err)
	}
}

// TestFailingHistoryIsServedByEveryInstance: the drawing of a failing history is kept in the
// data Redis with the run, so an instance that did not run the row links and serves it: after a
// run of `seckill lab` (its own Runner, no file written), and after a run another instance made
// over HTTP (which serves the same page from the file it wrote).
func TestFailingHistoryIsServedByEveryInstance(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	sc, err := lab.Lookup("none")
	if err != nil {
		t.Fatal(err)
	}
	cli := &lab.Runner{Data: testredis.Client(t, f.Data), NoHistoryFiles: true}
	if res := cli.Run(context.Background(), sc); res.History != lab.NotLinearizable || !res.HistoryKept || res.HistoryFile != "" {
		t.Fatalf("none, run as the CLI does: history %q, kept %v, file %q", res.History, res.HistoryKept, res.HistoryFile)
	}
	page := func(base string) string {
		t.Helper()
		if last := lastRuns(t, base)["none"]; last.HistoryURL != "/lab/scenarios/none/history" {
			t.Fatalf("%s lists none's last run with history link %q", base, last.HistoryURL)
		}
		r := do(t, http.MethodGet, base+"/lab/scenarios/none/history", nil)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
			!strings.Contains(r.raw, "<title>seckill lab, row 1 none: ") {
			t.Fatalf("GET %s/lab/scenarios/none/history: %d %q %.300s", base, r.status, r.header.Get("Content-Type"), r.raw)
		}
		return r.raw
	}
	fromCLI := page(f.HTTP.URL)

	other := labhttp.New(f.App.Service, &lab.Runner{Data: testredis.Client(t, f.Data), HistoryDir: t.TempDir()}, nil, nil)
	srv := httptest.NewServer(handler.New(f.App.Service, handler.Options{Mount: other.Mount}))
	defer srv.Close()
	defer other.Close()
	if r := do(t, http.MethodPost, srv.URL+"/lab/scenarios/none/run", nil); r.status != http.StatusOK {
		t.Fatalf("run none on the other instance: %d %s", r.status, r.raw)
	}
	own := page(srv.URL)
	if served := page(f.HTTP.URL); served != own || served == fromCLI {
		t.Fatalf("the first instance serves a drawing of %d bytes; the other instance's run drew %d (the CLI's run %d); want the other's",
			len(served), len(own), len(fromCLI))
	}
}

// TestLabHistoryFilesAreRemovedOnClose: the history files of the last runs go with the service.
func TestLabHistoryFilesAreRemovedOnClose(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	fake := &fakeLab{history: filepath.Join(t.TempDir(), "history.html")}
	if err := os.WriteFile(fake.history, []byte("<html></html>"), 0o600); err != nil {
		t.Fatal(err)
	}
	lb := labhttp.New(f.App.Service, fake, nil, nil)
	srv := httptest.NewServer(handler.New(f.App.Service, handler.Options{Mount: lb.Mount}))
	defer srv.Close()
	if r := do(t, http.MethodPost, srv.URL+"/lab/scenarios/lua/run", nil); r.status != http.StatusOK {
		t.Fatalf("run: %d %s", r.status, r.raw)
	}
	if _, err := os.Stat(fake.history); err != nil {
		t.Fatalf("the history file should be kept while the service runs: %v", err)
	}
	lb.Close()
	if _, err := os.Stat(fake.history); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("history file %s left after Close: %v", fake.history, err)
	}
}

// TestLabRunGoesThroughTheRunnerItIsGiven: the handler runs scenarios only through the
// LabRunner app gives it (no reaching into the service for Redis clients), and without one the
// run endpoint answers 503.
func TestLabRunGoesThroughTheRunnerItIsGiven(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	fake := &fakeLab{}
	for _, c := range []struct {
		runner labhttp.Runner
		status int
	}{{fake, http.StatusOK}, {nil, http.StatusServiceUnavailable}} {
		lb := labhttp.New(f.App.Service, c.runner, nil, nil)
		srv := httptest.NewServer(handler.New(f.App.Service, handler.Options{Mount: lb.Mount}))
		r := do(t, http.MethodPost, srv.URL+"/lab/scenarios/atomic/run", nil)
		srv.Close()
		if r.status != c.status {
			t.Fatalf("runner %v: status %d, want %d: %s", c.runner, r.status, c.status, r.raw)
		}
	}
	if len(fake.ran) != 1 || fake.ran[0] != "atomic" {
		t.Fatalf("the fake ran %v, want [atomic]", fake.ran)
	}
}

// lastRuns is the last run of each scenario as GET /lab/scenarios lists it.
func lastRuns(t *testing.T, base string) map[string]lab.Result {
	t.Helper()
	r := do(t, http.MethodGet, base+"/lab/scenarios", nil)
	var body labhttp.LabScenarios
	if r.status != http.StatusOK {
		t.Fatalf("GET /lab/scenarios: %d %s", r.status, r.raw)
	}
	if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
		t.Fatal(err)
	}
	return body.Last
}

// TestLabListsRunsStartedElsewhere: the dashboard's rows are filled from GET /lab/scenarios, so
// it lists the last run of each scenario whoever started it: this instance over HTTP, or
// `seckill lab` (another Runner over the same data Redis). The list leaves the timelines out;
// a scenario's result route has it.
func TestLabListsRunsStartedElsewhere(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	if last := lastRuns(t, f.HTTP.URL); len(last) != 0 {
		t.Fatalf("before any run: %v", last)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/lab/scenarios/none/run", nil); r.status != http.StatusOK {
		t.Fatalf("run none: %d %s", r.status, r.raw)
	}
	sc, err := lab.Lookup("atomic")
	if err != nil {
		t.Fatal(err)
	}
	// As `seckill lab` does: its own Runner, its own clients, the same data Redis.
	cli := &lab.Runner{Data: testredis.Client(t, f.Data), HistoryDir: t.TempDir()}
	ran := cli.Run(context.Background(), sc)
	last := lastRuns(t, f.HTTP.URL)
	// A row the machine stalled in is STARVED whatever its checks said: the listing is what is
	// tested here, not the verdicts (lab's tests rerun such rows).
	judged := func(name, want string) bool { v := last[name].Verdict; return v == want || v == lab.Starved }
	if len(last) != 2 || !judged("none", lab.Reproduced) || !judged("atomic", lab.Held) {
		t.Fatalf("want none REPRODUCED and atomic HELD (or STARVED on a stalled machine), got %+v", last)
	}
	for name, res := range last {
		if len(res.Timeline) != 0 || res.Sold == 0 || len(res.Checks) == 0 || res.FinishedAt.IsZero() || res.HistoryFile != "" {
			t.Errorf("%s is listed as %+v: want its figures and checks, no timeline, no file path", name, res)
		}
	}
	if !last["atomic"].FinishedAt.Equal(ran.FinishedAt) {
		t.Fatalf("atomic finished at %s, listed %s", ran.FinishedAt, last["atomic"].FinishedAt)
	}
	r := do(t, http.MethodGet, f.HTTP.URL+"/lab/scenarios/atomic/result", nil)
	var full lab.Result
	if r.status != http.StatusOK {
		t.Fatalf("GET atomic's result: %d %s", r.status, r.raw)
	}
	if err := json.Unmarshal([]byte(r.raw), &full); err != nil {
		t.Fatal(err)
	}
	if full.Verdict != lab.Held || len(full.Timeline) != len(ran.Timeline) || len(full.Timeline) == 0 {
		t.Fatalf("atomic's result: %s with %d spans, ran %d", full.Verdict, len(full.Timeline), len(ran.Timeline))
	}
	for path, want := range map[string]string{"/lab/scenarios/fenced/result": "has not run", "/lab/scenarios/no-such/result": "unknown scenario"} {
		if r := do(t, http.MethodGet, f.HTTP.URL+path, nil); r.status != http.StatusNotFound || !strings.Contains(r.raw, want) {
			t.Errorf("GET %s: want 404 %q, got %d %s", path, want, r.status, r.raw)
		}
	}
}
