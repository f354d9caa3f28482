// Package metrics exposes the service's Prometheus metrics: sales by mode and result, lock wait
// and hold times, watchdog renewals and failures, stale writes rejected, foreign unlocks, lab
// runs by verdict, and the Go runtime (goroutines, memory) and process (RSS) collectors.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one instance's registry. Each App has its own, so tests can run several.
type Metrics struct {
	reg             *prometheus.Registry
	sales           *prometheus.CounterVec
	lockWait        *prometheus.HistogramVec
	lockHold        *prometheus.HistogramVec
	renewals        *prometheus.CounterVec
	renewalFailures *prometheus.CounterVec
	staleWrites     *prometheus.CounterVec
	foreignUnlocks  *prometheus.CounterVec
	labRuns         *prometheus.CounterVec
	checkoutHeld    *prometheus.GaugeVec
	checkoutFull    *prometheus.CounterVec
}

// New builds the registry with every metric.
func New() *Metrics {
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		sales: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_sales_total", Help: "Sale requests by lock mode and result (sold, soldout, stale, restocked, lock-error, lost, crashed, error).",
		}, []string{"mode", "result"}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_lock_wait_seconds", Help: "Time spent acquiring the lock, by mode.", Buckets: buckets,
		}, []string{"mode"}),
		lockHold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_lock_hold_seconds", Help: "Time the lock was held (the critical section), by mode.", Buckets: buckets,
		}, []string{"mode"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_watchdog_renewals_total", Help: "Successful lease renewals by the watchdog, by mode.",
		}, []string{"mode"}),
		renewalFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_watchdog_failures_total", Help: "Leases lost while held (renewal failed or validity ran out), by mode.",
		}, []string{"mode"}),
		staleWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_stale_writes_rejected_total", Help: "Writes rejected because their fencing token was stale, by mode.",
		}, []string{"mode"}),
		foreignUnlocks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_foreign_unlocks_total", Help: "Releases that deleted another holder's lock (broken modes), by mode.",
		}, []string{"mode"}),
		labRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_lab_runs_total", Help: "Lab scenario runs by scenario and verdict.",
		}, []string{"scenario", "verdict"}),
		checkoutHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_checkout_permits", Help: "Checkout permits this instance holds now (checkout.limit), by SKU.",
		}, []string{"sku"}),
		checkoutFull: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_checkout_refusals_total", Help: "Sales refused because no checkout permit was free within checkout.wait, by SKU.",
		}, []string{"sku"}),
	}
	m.reg.MustRegister(m.sales, m.lockWait, m.lockHold, m.renewals, m.renewalFailures, m.staleWrites,
		m.foreignUnlocks, m.labRuns, m.checkoutHeld, m.checkoutFull,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the underlying registry (for tests that gather directly).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveSale records one sale request.
func (m *Metrics) ObserveSale(mode, result string, wait, hold time.Duration) {
	m.sales.WithLabelValues(mode, result).Inc()
	if wait > 0 {
		m.lockWait.WithLabelValues(mode).Observe(wait.Seconds())
	}
	if hold > 0 {
		m.lockHold.WithLabelValues(mode).Observe(hold.Seconds())
	}
}

// ObserveStaleWrite records a stale write rejected by the fencing token.
func (m *Metrics) ObserveStaleWrite(mode string) { m.staleWrites.WithLabelValues(mode).Inc() }

// ObserveForeignUnlock records a release that deleted another holder's lock.
func (m *Metrics) ObserveForeignUnlock(mode string) { m.foreignUnlocks.WithLabelValues(mode).Inc() }

// ObserveRenewals records n watchdog renewals of one lease.
func (m *Metrics) ObserveRenewals(mode string, n int64) {
	if n > 0 {
		m.renewals.WithLabelValues(mode).Add(float64(n))
	}
}

// ObserveLeaseLost records a lease lost while held.
func (m *Metrics) ObserveLeaseLost(mode string) { m.renewalFailures.WithLabelValues(mode).Inc() }

// ObserveCheckout records a checkout permit taken ("enter") or given back ("leave"), or a buyer
// refused one ("full"), for sku.
func (m *Metrics) ObserveCheckout(sku, event string) {
	switch event {
	case "enter":
		m.checkoutHeld.WithLabelValues(sku).Inc()
	case "leave":
		m.checkoutHeld.WithLabelValues(sku).Dec()
	case "full":
		m.checkoutFull.WithLabelValues(sku).Inc()
	}
}

// ObserveLabRun records a lab scenario's verdict.
func (m *Metrics) ObserveLabRun(scenario, verdict string) {
	m.labRuns.WithLabelValues(scenario, verdict).Inc()
}
