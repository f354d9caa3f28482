// Package labhttp is the lab's HTTP side: the scenario list, a scenario's run and failing history,
// and the dashboard's burst. app mounts it on the service's router (handler.Options.Mount); the
// service and its handlers know nothing of it.
package labhttp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/httpkit"
	"seckill/internal/modes"
	"seckill/lab"
	"seckill/metrics"
	"seckill/service"
)

// Runner runs one scenario of the lab (a *lab.Runner; tests may fake it).
type Runner interface {
	Run(ctx context.Context, sc lab.Scenario) lab.Result
}

// LastRunner is a Runner that also reads the last run of every scenario wherever it was started
// (a *lab.Runner keeps them in the data Redis): the dashboard then shows the verdicts of runs
// started on another instance or by `seckill lab`. Without it, the lab knows its own runs only.
type LastRunner interface {
	LastRuns(ctx context.Context) (map[string]lab.Result, error)
	// LastHistory reads one scenario's last run with the drawing of its failing history kept
	// beside it (nil when none was kept); ok is false when it has not run.
	LastHistory(ctx context.Context, name string) (res lab.Result, page []byte, ok bool, err error)
}

// Service is what the lab's routes use of the service.
type Service interface {
	lab.Seller
	Settings() service.Settings
}

// Lab is the lab's routes with their state: what runs now and the last failing history of each
// scenario.
type Lab struct{ api *labAPI }

// New builds the lab's routes. runner may be nil (a run then answers 503); m may be nil.
func New(svc Service, runner Runner, m *metrics.Metrics, log *slog.Logger) *Lab {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lab{api: &labAPI{svc: svc, runner: runner, metrics: m, log: log, histories: map[string]string{},
		last: map[string]lab.Result{}}}
}

// Mount adds the lab's routes to r (it is a handler.Options.Mount).
func (lb *Lab) Mount(r gin.IRouter, kit httpkit.Kit) {
	l := lb.api
	l.fail = kit.Fail
	r.GET("/lab/scenarios", l.listScenarios)
	r.POST("/lab/scenarios/:name/run", kit.Admin, l.runScenario)
	r.GET("/lab/scenarios/:name/result", l.result)
	r.GET("/lab/scenarios/:name/history", l.history)
	r.POST("/lab/burst", kit.Admin, l.burst)
}

// Close removes the history files the lab's runs left (app calls it on shutdown).
func (lb *Lab) Close() {
	l := lb.api
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, file := range l.histories {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("remove lab history", "file", file, "err", err)
		}
		delete(l.histories, name)
	}
}

// labAPI serves the scenario lab and the dashboard's burst. One experiment runs at a time, so
// that the timings a scenario relies on are not disturbed by another one.
type labAPI struct {
	svc     Service
	runner  Runner
	metrics *metrics.Metrics
	log     *slog.Logger
	fail    func(*gin.Context, error)
	mu      sync.Mutex
	running string // name of what runs now, "" when idle
	// histories maps a scenario to the visualisation of its last run's history when that was
	// not linearizable (a file the lab wrote).
	histories map[string]string
	// last is the last run of each scenario this instance ran.
	last map[string]lab.Result
}

// errLabBusy: another experiment is running.
var errLabBusy = errors.New("another lab experiment is running")

// begin marks name as running, or says what already runs.
func (l *labAPI) begin(name string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running != "" {
		return l.running, false
	}
	l.running = name
	return "", true
}

func (l *labAPI) end() {
	l.mu.Lock()
	l.running = ""
	l.mu.Unlock()
}

func (l *labAPI) now() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// enabled answers 403 when the lab is disabled and reports whether it may go on.
func (l *labAPI) enabled(c *gin.Context) bool {
	if l.svc.Settings().LabEnabled {
		return true
	}
	c.AbortWithStatusJSON(http.StatusForbidden, httpkit.ErrorBody{
		Error: service.ErrLabDisabled.Error(), Status: http.StatusForbidden})
	return false
}

// busy answers 409 naming what runs.
func busy(c *gin.Context, what string) {
	c.AbortWithStatusJSON(http.StatusConflict, httpkit.ErrorBody{
		Error: fmt.Sprintf("%s (%s); try again when it has finished", errLabBusy, what), Status: http.StatusConflict})
}

// LabScenarios is the answer of GET /lab/scenarios.
type LabScenarios struct {
	Enabled   bool           `json:"enabled"`
	Running   string         `json:"running,omitempty"`
	Modes     []string       `json:"modes"`
	MaxBurst  int            `json:"maxBurst"`
	Scenarios []lab.Scenario `json:"scenarios"`
	// Last is the last run of each scenario that has run, by name, without its timeline
	// (GET /lab/scenarios/{name}/result has it): runs started here, on another instance over
	// the same Redis, or by `seckill lab`.
	Last map[string]lab.Result `json:"last"`
}

// lastRuns is the last run of each scenario: the newer of this instance's own and the one kept
// in Redis. A Redis that does not answer leaves this instance's own runs.
func (l *labAPI) lastRuns(ctx context.Context) map[string]lab.Result {
	out := map[string]lab.Result{}
	if lr, ok := l.runner.(LastRunner); ok {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		kept, err := lr.LastRuns(ctx)
		cancel()
		if err != nil {
			l.log.Warn("lab: read the last runs", "err", err)
		}
		for name, res := range kept {
			out[name] = res
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, res := range l.last {
		if kept, ok := out[name]; !ok || !res.FinishedAt.Before(kept.FinishedAt) {
			out[name] = res
		}
	}
	for name, res := range out {
		out[name] = l.public(res)
	}
	return out
}

// public is res as the service answers it: the link to its history page when the data Redis
// keeps that page with the run (any instance serves it) or this instance wrote it, and no path
// on the machine that ran it. l.mu is held.
func (l *labAPI) public(res lab.Result) lab.Result {
	if res.HistoryKept || res.HistoryFile != "" && l.histories[res.Name] == res.HistoryFile {
		res.HistoryURL = "/lab/scenarios/" + url.PathEscape(res.Name) + "/history"
	}
	if res.HistoryFile != "" {
		notes := make([]string, 0, len(res.Notes))
		for _, n := range res.Notes {
			if strings.Contains(n, res.HistoryFile) {
				if res.HistoryKept {
					continue // the note that it is kept in Redis says where to find it
				}
				n = "history: its drawing is " + cmp.Or(res.HistoryURL, "on the machine that ran it")
			}
			notes = append(notes, n)
		}
		res.Notes = notes
	}
	res.HistoryFile = ""
	return res
}

// listScenarios godoc
//
//	@Summary		The lab's scenarios
//	@Description	Every row of the scenario guide (docs/lab.md) that the lab can run, with what it
//	@Description	expects; whether the lab is enabled and which experiment (if any) is running now.
//	@Tags			lab
//	@Produce		json
//	@Success		200	{object}	LabScenarios
//	@Router			/lab/scenarios [get]
func (l *labAPI) listScenarios(c *gin.Context) {
	last := l.lastRuns(c.Request.Context())
	for name, res := range last {
		res.Timeline = nil
		last[name] = res
	}
	c.JSON(http.StatusOK, LabScenarios{Enabled: l.svc.Settings().LabEnabled, Running: l.now(),
		Modes: modes.Names(), MaxBurst: lab.MaxBurst, Scenarios: lab.Scenarios(), Last: last})
}

// result godoc
//
//	@Summary		The last run of a scenario
//	@Description	The result of the scenario's last run, timeline included, whoever started it: this
//	@Description	instance, another one over the same Redis, or `seckill lab`. historyUrl links the
//	@Description	failing history's page when one was kept (GET /lab/scenarios/{name}/history).
//	@Tags			lab
//	@Produce		json
//	@Param			name	path		string	true	"scenario name (GET /lab/scenarios)"
//	@Success		200		{object}	lab.Result
//	@Failure		404		{object}	httpkit.ErrorBody	"unknown scenario, or it has not run"
//	@Router			/lab/scenarios/{name}/result [get]
func (l *labAPI) result(c *gin.Context) {
	sc, err := lab.Lookup(c.Param("name"))
	if err != nil {
		c.AbortWithStatusJSON(http.StatusNotFound, httpkit.ErrorBody{Error: err.Error(), Status: http.StatusNotFound})
		return
	}
	res, ok := l.lastRuns(c.Request.Context())[sc.Name]
	if !ok {
		c.AbortWithStatusJSON(http.StatusNotFound, httpkit.ErrorBody{
			Error: "scenario " + sc.Name + " has not run (or not in the last " + lab.LastRunTTL.String() + ")", Status: http.StatusNotFound})
		return
	}
	c.JSON(http.StatusOK, res)
}

// runScenario godoc
//
//	@Summary		Run one lab scenario
//	@Description	Runs the scenario against this service's Redis servers on its own SKU (lab-<name>), with
//	@Description	several simulated instances, many concurrent buyers and the row's faults, and answers
//	@Description	the observed figures and the verdict: REPRODUCED (an unsafe mode showed its anomaly),
//	@Description	HELD (a safe mode showed none), UNEXPECTED, or SKIPPED (a row whose topology cannot be
//	@Description	built here, e.g. no redis-sentinel). Takes a few seconds. Outage phases stop
//	@Description	only Redis servers the lab starts for itself. One experiment at a time.
//	@Tags			lab
//	@Produce		json
//	@Param			name			path		string	true	"scenario name (GET /lab/scenarios)"
//	@Param			X-Admin-Token	header		string	false	"required when server.adminToken is set"
//	@Success		200				{object}	lab.Result
//	@Failure		401				{object}	httpkit.ErrorBody	"admin token missing or wrong"
//	@Failure		403				{object}	httpkit.ErrorBody	"the lab is disabled (lab.enabled=false)"
//	@Failure		404				{object}	httpkit.ErrorBody	"unknown scenario"
//	@Failure		409				{object}	httpkit.ErrorBody	"another experiment is running"
//	@Failure		503				{object}	httpkit.ErrorBody	"the server was built without a lab runner"
//	@Router			/lab/scenarios/{name}/run [post]
func (l *labAPI) runScenario(c *gin.Context) {
	if !l.enabled(c) {
		return
	}
	if err := httpkit.OnlyParams(c.Request.URL.Query()); err != nil {
		l.fail(c, err)
		return
	}
	sc, err := lab.Lookup(c.Param("name"))
	if err != nil {
		c.AbortWithStatusJSON(http.StatusNotFound, httpkit.ErrorBody{Error: err.Error(), Status: http.StatusNotFound})
		return
	}
	if l.runner == nil {
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, httpkit.ErrorBody{
			Error: "this server was built without a lab runner", Status: http.StatusServiceUnavailable})
		return
	}
	if what, ok := l.begin("scenario " + sc.Name); !ok {
		busy(c, what)
		return
	}
	defer l.end()
	// The scenario must finish even if the client goes away: its fleet cleans up after itself.
	ctx := context.WithoutCancel(c.Request.Context())
	res := l.runner.Run(ctx, sc)
	l.log.Info("lab scenario", "name", sc.Name, "verdict", res.Verdict, "ms", res.DurationMs)
	if l.metrics != nil {
		l.metrics.ObserveLabRun(sc.Name, res.Verdict)
	}
	// One history file per scenario at most: the one of its last run, the older one removed.
	l.mu.Lock()
	if old := l.histories[sc.Name]; old != "" && old != res.HistoryFile {
		if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("remove lab history", "file", old, "err", err)
		}
	}
	if res.HistoryFile != "" {
		l.histories[sc.Name] = res.HistoryFile
	} else {
		delete(l.histories, sc.Name)
	}
	l.last[sc.Name] = res
	res = l.public(res)
	l.mu.Unlock()
	c.JSON(http.StatusOK, res)
}

// history godoc
//
//	@Summary		The failing history of a scenario's last run
//	@Description	porcupine's visualisation (HTML) of the smallest part of the scenario's last recorded
//	@Description	history that is not linearizable: the buyers' calls and answers against the stock
//	@Description	counter, under a title, the scenario and a legend. Served for the last run wherever it
//	@Description	was started (this instance, another one over the same Redis, or `seckill lab`): the
//	@Description	data Redis keeps the page with the run (up to 256 KiB compressed; a larger one is
//	@Description	not kept), and this instance also serves the page it wrote for its own run. 404 for
//	@Description	an unknown scenario, and when its last run was linearizable, has not run, or its page
//	@Description	was not kept.
//	@Tags			lab
//	@Produce		html
//	@Param			name	path	string	true	"scenario name (GET /lab/scenarios)"
//	@Success		200		{string}	string	"the visualisation"
//	@Failure		404		{object}	httpkit.ErrorBody	"unknown scenario, or no failing history kept for its last run"
//	@Router			/lab/scenarios/{name}/history [get]
func (l *labAPI) history(c *gin.Context) {
	sc, err := lab.Lookup(c.Param("name"))
	if err != nil {
		c.AbortWithStatusJSON(http.StatusNotFound, httpkit.ErrorBody{Error: err.Error(), Status: http.StatusNotFound})
		return
	}
	// The last run kept in Redis and its page, read together.
	var kept lab.Result
	var page []byte
	if lr, ok := l.runner.(LastRunner); ok {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		kept, page, _, err = lr.LastHistory(ctx, sc.Name)
		cancel()
		if err != nil {
			l.log.Warn("lab: read the last run's history", "scenario", sc.Name, "err", err)
		}
	}
	// This instance's own last run, and the file it wrote for it: only a file one of its own
	// runs wrote is ever served (the name picks from that map).
	l.mu.Lock()
	own, ran := l.last[sc.Name]
	file := l.histories[sc.Name]
	l.mu.Unlock()
	switch {
	case ran && !own.FinishedAt.Before(kept.FinishedAt) && file != "":
		c.Header("Content-Type", "text/html; charset=utf-8")
		c.File(file)
	case page != nil && (!ran || !kept.FinishedAt.Before(own.FinishedAt)):
		c.Data(http.StatusOK, "text/html; charset=utf-8", page)
	default:
		c.AbortWithStatusJSON(http.StatusNotFound, httpkit.ErrorBody{
			Error:  "no failing history for scenario " + sc.Name + " (its last run was linearizable, has not run, or its drawing was not kept)",
			Status: http.StatusNotFound})
	}
}

// burst godoc
//
//	@Summary		Fire a burst of concurrent sales
//	@Description	Fires n concurrent sales through this service, on its own SKU (inventory.key), in the
//	@Description	chosen lock mode, and answers the counts by outcome and a timeline of answers over time
//	@Description	(for the dashboard's chart). Compare GET /inventory before and after.
//	@Tags			lab
//	@Produce		json
//	@Param			n				query		int		false	"number of concurrent sales (1..2000, default 100)"
//	@Param			lock			query		string	false	"lock mode (default lock.mode)"
//	@Param			workMs			query		int		false	"business time inside the critical section, ms"
//	@Param			X-Admin-Token	header		string	false	"required when server.adminToken is set"
//	@Success		200				{object}	lab.BurstResult
//	@Failure		400				{object}	httpkit.ErrorBody	"bad n, workMs or lock mode"
//	@Failure		401				{object}	httpkit.ErrorBody	"admin token missing or wrong"
//	@Failure		403				{object}	httpkit.ErrorBody	"the lab is disabled (lab.enabled=false)"
//	@Failure		409				{object}	httpkit.ErrorBody	"another experiment is running"
//	@Router			/lab/burst [post]
func (l *labAPI) burst(c *gin.Context) {
	if !l.enabled(c) {
		return
	}
	if err := httpkit.OnlyParams(c.Request.URL.Query(), "n", "lock", "workMs"); err != nil {
		l.fail(c, err)
		return
	}
	n, err := httpkit.QueryInt(c, "n", 100)
	if err == nil && (n < 1 || n > lab.MaxBurst) {
		err = badRequest("n=%d is out of range 1..%d", n, lab.MaxBurst)
	}
	// The route is behind the admin guard: its sales are the operator's.
	req := service.SaleRequest{Mode: c.Query("lock"), Operator: true}
	var work time.Duration
	if _, given := c.GetQuery("lock"); err == nil && given && req.Mode == "" {
		err = fmt.Errorf("%w: %w: lock= is empty", service.ErrBadRequest, modes.ErrUnknownMode)
	}
	if err == nil && req.Mode != "" {
		if _, lerr := modes.LookupMode(req.Mode); lerr != nil {
			err = fmt.Errorf("%w: %w", service.ErrBadRequest, lerr)
		}
	}
	if v, ok := c.GetQuery("workMs"); ok && err == nil {
		work, err = httpkit.ParseMillis("workMs", v)
		if limit := l.svc.Settings().MaxWork; err == nil && limit > 0 && work > limit {
			err = badRequest("workMs=%d exceeds the configured maximum of %d ms", work.Milliseconds(), limit.Milliseconds())
		}
		mode := req.Mode
		if mode == "" {
			mode = l.svc.Settings().Mode
		}
		// Checked here so that a bad combination is one 400, not n failed sales.
		if m, lerr := modes.LookupMode(mode); err == nil && lerr == nil && work > 0 && !m.Supports(modes.FaultWork) {
			err = badRequest("workMs does not apply to lock mode %s", m.Name)
		}
	}
	if err != nil {
		l.fail(c, err)
		return
	}
	if what, ok := l.begin(fmt.Sprintf("burst of %d", n)); !ok {
		busy(c, what)
		return
	}
	defer l.end()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 2*time.Minute)
	defer cancel()
	c.JSON(http.StatusOK, lab.Burst(ctx, l.svc, int(n), req, work))
}

var badRequest = httpkit.BadRequest
