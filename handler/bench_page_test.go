package handler_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill/handler"
	"seckill/internal/benchreport"
)

// TestBenchPage: /bench draws the kept bench run, says how to make one when none is kept (404)
// and names a broken file without quoting it (500). The dashboard's header links it.
func TestBenchPage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kept := filepath.Join(dir, "bench-last.json")
	srv := httptest.NewServer(handler.New(nil, handler.Options{BenchReport: kept}))
	defer srv.Close()

	if r := do(t, http.MethodGet, srv.URL+"/bench", nil); r.status != http.StatusNotFound || !strings.Contains(r.raw, "go run . bench") {
		t.Errorf("no run kept: %d %s", r.status, r.raw)
	}
	rep := benchreport.Report{Cells: []benchreport.Cell{{Strategy: "lua", Kind: "mode", Instances: 1, Buyers: 8, Rate: 1234,
		WaitQuantilesMs: make([]float64, len(benchreport.WaitQuantileP)), SalesPerBuyer: []int{1, 2, 3, 4, 5, 6, 7, 8}}},
		WaitQuantileP: benchreport.WaitQuantileP}
	if err := benchreport.KeepLastRun(kept, rep); err != nil {
		t.Fatal(err)
	}
	r := do(t, http.MethodGet, srv.URL+"/bench", nil)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(r.raw, `data-rate="1234.0"`) || !strings.Contains(r.raw, `class="cdf-line"`) {
		t.Errorf("a kept run: %d %s %.300s", r.status, r.header.Get("Content-Type"), r.raw)
	}
	if err := os.WriteFile(kept, []byte("secret-ish garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := do(t, http.MethodGet, srv.URL+"/bench", nil); r.status != http.StatusInternalServerError ||
		!strings.Contains(r.raw, "not a bench report") || strings.Contains(r.raw, "garbage") || strings.Contains(r.raw, dir) {
		t.Errorf("a broken file: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodGet, srv.URL+"/", nil); !strings.Contains(r.raw, `href="/bench"`) {
		t.Errorf("the dashboard does not link /bench")
	}
}
