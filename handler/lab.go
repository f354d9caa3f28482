package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/modes"
	"seckill/lab"
	"seckill/service"
)

// labAPI serves the scenario lab and the dashboard's burst. One experiment runs at a time, so
// that the timings a scenario relies on are not disturbed by another one.
type labAPI struct {
	a       *API
	mu      sync.Mutex
	running string // name of what runs now, "" when idle
	// histories maps a scenario to the visualisation of its last run's history when that was
	// not linearizable (a file the lab wrote).
	histories map[string]string
}

func newLabAPI(a *API) *labAPI { return &labAPI{a: a, histories: map[string]string{}} }

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
	if l.a.svc.Settings().LabEnabled {
		return true
	}
	c.AbortWithStatusJSON(http.StatusForbidden, ErrorBody{
		Error: service.ErrLabDisabled.Error(), Status: http.StatusForbidden})
	return false
}

// busy answers 409 naming what runs.
func busy(c *gin.Context, what string) {
	c.AbortWithStatusJSON(http.StatusConflict, ErrorBody{
		Error: fmt.Sprintf("%s (%s); try again when it has finished", errLabBusy, what), Status: http.StatusConflict})
}

// LabScenarios is the answer of GET /lab/scenarios.
type LabScenarios struct {
	Enabled   bool           `json:"enabled"`
	Running   string         `json:"running,omitempty"`
	Modes     []string       `json:"modes"`
	MaxBurst  int            `json:"maxBurst"`
	Scenarios []lab.Scenario `json:"scenarios"`
}

// listScenarios godoc
//
//	@Summary		The lab's scenarios
//	@Description	Every row of the scenario guide (docs/scenarios.md) that the lab can run, with what it
//	@Description	expects; whether the lab is enabled and which experiment (if any) is running now.
//	@Tags			lab
//	@Produce		json
//	@Success		200	{object}	LabScenarios
//	@Router			/lab/scenarios [get]
func (l *labAPI) listScenarios(c *gin.Context) {
	c.JSON(http.StatusOK, LabScenarios{Enabled: l.a.svc.Settings().LabEnabled, Running: l.now(),
		Modes: modes.Names(), MaxBurst: lab.MaxBurst, Scenarios: lab.Scenarios()})
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
//	@Failure		401				{object}	ErrorBody	"admin token missing or wrong"
//	@Failure		403				{object}	ErrorBody	"the lab is disabled (lab.enabled=false)"
//	@Failure		404				{object}	ErrorBody	"unknown scenario"
//	@Failure		409				{object}	ErrorBody	"another experiment is running"
//	@Failure		503				{object}	ErrorBody	"the server was built without a lab runner"
//	@Router			/lab/scenarios/{name}/run [post]
func (l *labAPI) runScenario(c *gin.Context) {
	if !l.enabled(c) {
		return
	}
	if err := onlyParams(c.Request.URL.Query()); err != nil {
		l.a.fail(c, err)
		return
	}
	sc, err := lab.Lookup(c.Param("name"))
	if err != nil {
		c.AbortWithStatusJSON(http.StatusNotFound, ErrorBody{Error: err.Error(), Status: http.StatusNotFound})
		return
	}
	if l.a.opt.Lab == nil {
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, ErrorBody{
			Error: "this server was built without a lab runner", Status: http.StatusServiceUnavailable})
		return
	}
	if what, ok := l.begin("scenario " + sc.Name); !ok {
		busy(c, what)
		return
	}
	defer l.end()
	// The scenario must finish even if the client goes away: its fleet cleans up after itself.
	ctx := context.WithoutCancel(ctxOf(c))
	res := l.a.opt.Lab.Run(ctx, sc)
	l.a.log.Info("lab scenario", "name", sc.Name, "verdict", res.Verdict, "ms", res.DurationMs)
	if l.a.opt.Metrics != nil {
		l.a.opt.Metrics.ObserveLabRun(sc.Name, res.Verdict)
	}
	l.mu.Lock()
	if res.HistoryFile != "" {
		l.histories[sc.Name] = res.HistoryFile
	} else {
		delete(l.histories, sc.Name)
	}
	l.mu.Unlock()
	c.JSON(http.StatusOK, res)
}

// history godoc
//
//	@Summary		The failing history of a scenario's last run
//	@Description	porcupine's visualisation (HTML) of the smallest part of the scenario's last recorded
//	@Description	history that is not linearizable: the buyers' calls and answers against the stock
//	@Description	counter. 404 when the last run's history was linearizable, or the scenario has not run
//	@Description	on this instance.
//	@Tags			lab
//	@Produce		html
//	@Param			name	path	string	true	"scenario name (GET /lab/scenarios)"
//	@Success		200		{string}	string	"the visualisation"
//	@Failure		404		{object}	ErrorBody	"no failing history for this scenario"
//	@Router			/lab/scenarios/{name}/history [get]
func (l *labAPI) history(c *gin.Context) {
	l.mu.Lock()
	file := l.histories[c.Param("name")]
	l.mu.Unlock()
	if file == "" {
		c.AbortWithStatusJSON(http.StatusNotFound, ErrorBody{
			Error:  "no failing history for scenario " + c.Param("name") + " (its last run here was linearizable, or it has not run)",
			Status: http.StatusNotFound})
		return
	}
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.File(file)
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
//	@Failure		400				{object}	ErrorBody	"bad n, workMs or lock mode"
//	@Failure		401				{object}	ErrorBody	"admin token missing or wrong"
//	@Failure		403				{object}	ErrorBody	"the lab is disabled (lab.enabled=false)"
//	@Failure		409				{object}	ErrorBody	"another experiment is running"
//	@Router			/lab/burst [post]
func (l *labAPI) burst(c *gin.Context) {
	if !l.enabled(c) {
		return
	}
	if err := onlyParams(c.Request.URL.Query(), "n", "lock", "workMs"); err != nil {
		l.a.fail(c, err)
		return
	}
	n, err := queryInt(c, "n", 100)
	if err == nil && (n < 1 || n > lab.MaxBurst) {
		err = badRequest("n=%d is out of range 1..%d", n, lab.MaxBurst)
	}
	req := service.SaleRequest{Mode: c.Query("lock")}
	if _, given := c.GetQuery("lock"); err == nil && given && req.Mode == "" {
		err = fmt.Errorf("%w: %w: lock= is empty", service.ErrBadRequest, modes.ErrUnknownMode)
	}
	if err == nil && req.Mode != "" {
		if _, lerr := modes.LookupMode(req.Mode); lerr != nil {
			err = fmt.Errorf("%w: %w", service.ErrBadRequest, lerr)
		}
	}
	if v, ok := c.GetQuery("workMs"); ok && err == nil {
		req.Work, err = parseMillis("workMs", v)
		if limit := l.a.svc.Settings().MaxWork; err == nil && limit > 0 && req.Work > limit {
			err = badRequest("workMs=%d exceeds the configured maximum of %d ms", req.Work.Milliseconds(), limit.Milliseconds())
		}
		mode := req.Mode
		if mode == "" {
			mode = l.a.svc.Settings().Mode
		}
		// Checked here so that a bad combination is one 400, not n failed sales.
		if m, lerr := modes.LookupMode(mode); err == nil && lerr == nil && req.Work > 0 && !m.Supports(modes.FaultWork) {
			err = badRequest("workMs does not apply to lock mode %s", m.Name)
		}
	}
	if err != nil {
		l.a.fail(c, err)
		return
	}
	if what, ok := l.begin(fmt.Sprintf("burst of %d", n)); !ok {
		busy(c, what)
		return
	}
	defer l.end()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctxOf(c)), 2*time.Minute)
	defer cancel()
	c.JSON(http.StatusOK, lab.Burst(ctx, l.a.svc, int(n), req))
}
