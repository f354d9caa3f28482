package handler_test

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"seckill/config"
	"seckill/internal/apptest"
)

func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("series %s not found in /metrics", series)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMetricsAreScraped(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, nil)
	do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=2", nil)
	for range 3 {
		do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=lua", nil)
	}
	do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?lock=atomic", nil)
	r := do(t, http.MethodGet, f.HTTP.URL+"/metrics", nil)
	if r.status != http.StatusOK {
		t.Fatalf("/metrics: %d", r.status)
	}
	if v := metricValue(t, r.raw, `seckill_sales_total{mode="lua",result="sold"}`); v != 2 {
		t.Fatalf("lua sold = %v, want 2", v)
	}
	if v := metricValue(t, r.raw, `seckill_sales_total{mode="lua",result="soldout"}`); v != 1 {
		t.Fatalf("lua soldout = %v, want 1", v)
	}
	if v := metricValue(t, r.raw, `seckill_sales_total{mode="atomic",result="soldout"}`); v != 1 {
		t.Fatalf("atomic soldout = %v, want 1", v)
	}
	if v := metricValue(t, r.raw, `seckill_lock_wait_seconds_count{mode="lua"}`); v != 3 {
		t.Fatalf("lua wait observations = %v, want 3", v)
	}
	if v := metricValue(t, r.raw, "go_goroutines"); v < 1 {
		t.Fatalf("go_goroutines = %v", v)
	}
	metricValue(t, r.raw, "process_resident_memory_bytes")
}

func TestLabDisabledRefusesFaultsAndReset(t *testing.T) {
	t.Parallel()
	f := apptest.New(t, func(c *config.Config) { c.Lab.Enabled = false })
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/reset?stock=5", nil); r.status != http.StatusForbidden {
		t.Fatalf("reset with the lab disabled: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale?workMs=10", nil); r.status != http.StatusBadRequest {
		t.Fatalf("fault with the lab disabled: %d %s", r.status, r.raw)
	}
	if r := do(t, http.MethodPost, f.HTTP.URL+"/inventory/sale", nil); r.status != http.StatusOK {
		t.Fatalf("plain sale with the lab disabled: %d %s", r.status, r.raw)
	}
}
