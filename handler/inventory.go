package handler

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/httpkit"
	"seckill/internal/modes"
	"seckill/service"
	"seckill/store"
)

// saleParams are the query parameters /inventory/sale accepts.
var saleParams = []string{"lock", "sku", "workMs", "freezeMs", "pauseBeforeDelMs", "leaseMs", "crash"}

// faultParams are the sale's parameters that inject a fault: the lab's.
var faultParams = []string{"workMs", "freezeMs", "pauseBeforeDelMs", "leaseMs", "crash"}

// maxName bounds a mode, SKU or fault name (SKUs are at most 128 characters, see config).
const maxName = 128

// ParseSale turns the sale's query parameters into a request and the faults it asks for (the
// lab's, which travel beside the request: modes.WithFaults). It checks syntax only (numbers,
// known parameters); the service and the lab's hook check meaning (modes, fault bounds, the lab
// switch).
func ParseSale(q url.Values) (req service.SaleRequest, faults modes.Faults, err error) {
	var unknown []string
	for name := range q {
		if !slices.Contains(saleParams, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		more := ""
		if len(unknown) > 3 {
			unknown, more = unknown[:3], fmt.Sprintf(" and %d more", len(unknown)-3)
		}
		for i, u := range unknown {
			unknown[i] = httpkit.Name(u)
		}
		return req, faults, httpkit.BadRequest("unknown parameter(s) %s%s; accepted: %s", strings.Join(unknown, ", "), more, strings.Join(saleParams, ", "))
	}
	for name, vals := range q {
		if len(vals) > 1 {
			return req, faults, httpkit.BadRequest("parameter %s is given %d times", name, len(vals))
		}
	}
	req.Mode = q.Get("lock")
	req.SKU = q.Get("sku")
	faults.Crash = q.Get("crash")
	if q.Has("lock") && req.Mode == "" {
		return req, faults, fmt.Errorf("%w: %w: lock= is empty", service.ErrBadRequest, modes.ErrUnknownMode)
	}
	// Values longer than any valid one are refused here, quoted short, before anything echoes them.
	if len(req.Mode) > maxName {
		return req, faults, fmt.Errorf("%w: %w %s", service.ErrBadRequest, modes.ErrUnknownMode, httpkit.Quote(req.Mode))
	}
	if len(req.SKU) > maxName {
		return req, faults, fmt.Errorf("%w: unknown sku %s", service.ErrNotFound, httpkit.Quote(req.SKU))
	}
	if len(faults.Crash) > maxName {
		return req, faults, httpkit.BadRequest("crash=%s is not a fault", httpkit.Quote(faults.Crash))
	}
	// Every fault parameter given is named, whatever its value: where faults are refused, workMs=0
	// is refused as workMs=5 is.
	req.LabParams = []string{}
	for _, name := range faultParams {
		if q.Has(name) {
			if name == "crash" && (faults.Crash == modes.CrashAfterLock || faults.Crash == modes.CrashBeforeExpire) {
				name += "=" + faults.Crash
			}
			req.LabParams = append(req.LabParams, name)
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Duration
	}{{"workMs", &faults.Work}, {"freezeMs", &faults.Freeze}, {"pauseBeforeDelMs", &faults.PauseBeforeDel}, {"leaseMs", &req.Lease}} {
		v, ok := q[p.name]
		if !ok {
			continue
		}
		d, err := httpkit.ParseMillis(p.name, v[0])
		if err != nil {
			return req, faults, err
		}
		*p.dst = d
	}
	return req, faults, nil
}

// sale godoc
//
//	@Summary		Sell one item
//	@Description	Reads the stock, and if it is above 0 writes stock-1 and records an order, inside the
//	@Description	chosen lock mode (a read-check-write on purpose: only the lock protects it). GET is
//	@Description	accepted as in the classic demos, unless server.adminToken is set (then 405). A mode
//	@Description	outside lock.allowedModes and every fault parameter need lab.enabled (else 403) and,
//	@Description	when server.adminToken is set, the X-Admin-Token header (else 401). A sale in a lock
//	@Description	mode holds one of the SKU's checkout.limit permits while it waits for the lock and sells.
//	@Tags			inventory
//	@Produce		json
//	@Param			lock				query		string	false	"lock mode for this request (default lock.mode)"
//	@Param			sku					query		string	false	"SKU (default inventory.key)"
//	@Param			workMs				query		int		false	"business time inside the critical section, ms (lab)"
//	@Param			freezeMs			query		int		false	"stop-the-world pause of the holder and its watchdog before the write, ms (lab)"
//	@Param			pauseBeforeDelMs	query		int		false	"uuid: pause between the value check and the DEL, ms (lab)"
//	@Param			leaseMs				query		int		false	"an explicit lease, ms: the watchdog is off, as Redisson's lock(leaseTime) (lab)"
//	@Param			crash				query		string	false	"after-lock | before-expire: the holder dies (lab)"	Enums(after-lock, before-expire)
//	@Param			X-Admin-Token		header		string	false	"the operator's token: needed for lab modes and faults when server.adminToken is set"
//	@Success		200					{object}	SaleBody	"one sold"
//	@Failure		400					{object}	httpkit.ErrorBody	"bad parameter or unknown lock mode (validModes lists the modes)"
//	@Failure		401					{object}	httpkit.ErrorBody	"a lab mode or a fault without the admin token"
//	@Failure		403					{object}	httpkit.ErrorBody	"a lab mode or a fault with lab.enabled=false"
//	@Failure		405					{object}	httpkit.ErrorBody	"GET while server.adminToken is set"
//	@Failure		409					{object}	SaleBody	"sold out, a stale write rejected by the fencing token, or nothing sold because a restock came between the read and the write"
//	@Failure		500					{object}	SaleBody	"stock value not an integer, or an injected crash"
//	@Failure		503					{object}	SaleBody	"lock not obtained within the wait (a lock without expiry is named), Redis unavailable, the stock key missing (restock), server.maxInFlight reached, or no checkout permit free within checkout.wait (Retry-After)"
//	@Router			/inventory/sale [get]
//	@Router			/inventory/sale [post]
func (a *API) sale(c *gin.Context) {
	if c.Request.Method == http.MethodGet && a.opt.AdminToken != "" {
		// With an operator to protect, nothing that changes state is done on a GET: a link or an
		// <img> on any web page could otherwise sell, or plant a fault, in a visitor's name.
		c.Header("Allow", http.MethodPost)
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, httpkit.ErrorBody{
			Error:  "a sale changes state: use POST (GET is refused while server.adminToken is set)",
			Status: http.StatusMethodNotAllowed})
		return
	}
	req, faults, err := ParseSale(c.Request.URL.Query())
	req.Operator = a.isOperator(c)
	var res service.SaleResult
	if err == nil {
		ctx := ctxOf(c)
		if faults.Asked() {
			ctx = modes.WithFaults(ctx, faults)
		}
		res, err = a.svc.Sale(ctx, req)
	}
	if err == nil {
		c.JSON(http.StatusOK, SaleBody{SaleResult: res})
		return
	}
	status := statusOf(err)
	if status < 500 && status != http.StatusConflict && status != http.StatusTooManyRequests {
		// Refused before any sale was tried: the error shape of every endpoint, with no sale
		// figures that were never read.
		a.fail(c, err)
		return
	}
	body := SaleBody{SaleResult: res, Status: status}
	body.Instance = a.svc.Settings().Instance
	if !errors.Is(err, service.ErrSoldOut) {
		body.Error = a.message(err, status)
	}
	if body.Message == body.Error {
		body.Message = ""
	}
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	c.JSON(status, body)
}

// inventory godoc
//
//	@Summary		The audit view of the stock
//	@Description	sold counts recorded orders, independently of the stock value;
//	@Description	lostUpdates = sold - (initialStock - stock); oversold = max(0, sold - initialStock).
//	@Description	Without sku and with several SKUs configured, skus lists every SKU's audit too.
//	@Tags			inventory
//	@Produce		json
//	@Param			sku	query		string	false	"SKU (default inventory.key)"
//	@Success		200	{object}	InventoryView
//	@Failure		404	{object}	httpkit.ErrorBody	"unknown SKU"
//	@Failure		500	{object}	httpkit.ErrorBody	"a value that is not an integer"
//	@Failure		503	{object}	httpkit.ErrorBody	"Redis unavailable"
//	@Router			/inventory [get]
func (a *API) inventory(c *gin.Context) {
	inv, err := a.svc.Inventory(ctxOf(c), c.Query("sku"))
	if err != nil {
		a.fail(c, err)
		return
	}
	view := InventoryView{Inventory: inv}
	if _, one := c.GetQuery("sku"); !one && len(a.svc.SKUs()) > 1 {
		if view.SKUs, err = a.svc.InventoryAll(ctxOf(c)); err != nil {
			a.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, view)
}

// InventoryView is the audit of one SKU (the default one when no sku is given); without sku and
// with several SKUs configured, skus lists the audit of every SKU.
type InventoryView struct {
	store.Inventory
	SKUs []store.Inventory `json:"skus,omitempty"`
}

// reset godoc
//
//	@Summary		Reset the stock
//	@Description	Sets the stock (0..1,000,000,000; default inventory.stock), clears the orders and every lock
//	@Description	key of this service (on the data Redis and the masters), and records the initial stock.
//	@Tags			inventory
//	@Produce		json
//	@Param			stock			query		int		false	"new stock"
//	@Param			sku				query		string	false	"SKU (default inventory.key)"
//	@Param			X-Admin-Token	header		string	false	"required when server.adminToken is set"
//	@Success		200				{object}	store.Inventory
//	@Failure		400				{object}	httpkit.ErrorBody	"stock not a whole number or out of range"
//	@Failure		401				{object}	httpkit.ErrorBody	"admin token missing or wrong"
//	@Failure		503				{object}	httpkit.ErrorBody	"Redis unavailable"
//	@Router			/inventory/reset [post]
func (a *API) reset(c *gin.Context) {
	if err := httpkit.OnlyParams(c.Request.URL.Query(), "stock", "sku"); err != nil {
		a.fail(c, err)
		return
	}
	stock, err := httpkit.QueryInt(c, "stock", -1) // absent: -1, the configured default
	if _, given := c.GetQuery("stock"); err == nil && given && (stock < 0 || stock > a.svc.Settings().MaxStock) {
		err = httpkit.BadRequest("stock=%d is out of range 0..%d", stock, a.svc.Settings().MaxStock)
	}
	var inv store.Inventory
	if err == nil {
		inv, err = a.svc.Reset(ctxOf(c), c.Query("sku"), stock)
	}
	if err != nil {
		a.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, inv)
}

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status   string            `json:"status" example:"ok"`
	Instance string            `json:"instance"`
	Redis    map[string]string `json:"redis,omitempty"`
}

// healthz godoc
//
//	@Summary	Liveness: the process answers
//	@Tags		health
//	@Produce	json
//	@Success	200	{object}	Health
//	@Router		/healthz [get]
func (a *API) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, Health{Status: "ok", Instance: a.svc.Settings().Instance})
}

// readyz godoc
//
//	@Summary		Readiness: this instance can sell in its lock mode
//	@Description	200 when the data Redis answers and every SKU's stock key exists, plus the masters
//	@Description	lock.mode needs: all of them for multilock, a majority for redlock and redlock-fenced,
//	@Description	none for the single-instance modes (a master they do not need is listed, and may be
//	@Description	down). 503 with Retry-After otherwise; each server is named by its role (data,
//	@Description	master1..), never by its address.
//	@Tags			health
//	@Produce		json
//	@Success		200	{object}	Health
//	@Failure		503	{object}	Health	"a Redis the mode needs is down, or a stock key is missing"
//	@Router			/readyz [get]
func (a *API) readyz(c *gin.Context) {
	st, err := a.svc.Ready(ctxOf(c))
	h := Health{Status: "ok", Instance: a.svc.Settings().Instance, Redis: st}
	if err != nil {
		h.Status = "unavailable"
		c.Header("Retry-After", "1")
		c.JSON(http.StatusServiceUnavailable, h)
		return
	}
	c.JSON(http.StatusOK, h)
}

// restock godoc
//
//	@Summary		Set the stock (the operator)
//	@Description	Sets the stock of a SKU (0..1,000,000,000), whatever lab.enabled says: the way back when
//	@Description	the data Redis lost the stock key, or to put more on sale. Orders and locks are kept; the
//	@Description	initial stock moves by as much as the stock, so the audit stays true. A sale that read the
//	@Description	stock before the restock writes nothing after it (409). Needs the
//	@Description	X-Admin-Token header; without server.adminToken set it is open only with the lab on.
//	@Tags			inventory
//	@Produce		json
//	@Param			stock			query		int		true	"new stock"
//	@Param			sku				query		string	false	"SKU (default inventory.key)"
//	@Param			X-Admin-Token	header		string	false	"the operator's token (server.adminToken)"
//	@Success		200				{object}	store.Inventory
//	@Failure		400				{object}	httpkit.ErrorBody	"stock missing, not a whole number or out of range"
//	@Failure		401				{object}	httpkit.ErrorBody	"admin token missing or wrong"
//	@Failure		403				{object}	httpkit.ErrorBody	"no admin token configured and the lab is off"
//	@Failure		503				{object}	httpkit.ErrorBody	"Redis unavailable"
//	@Router			/inventory/restock [post]
func (a *API) restock(c *gin.Context) {
	if err := httpkit.OnlyParams(c.Request.URL.Query(), "stock", "sku"); err != nil {
		a.fail(c, err)
		return
	}
	if _, given := c.GetQuery("stock"); !given {
		a.fail(c, httpkit.BadRequest("stock is required: POST /inventory/restock?stock=N"))
		return
	}
	stock, err := httpkit.QueryInt(c, "stock", 0)
	var inv store.Inventory
	if err == nil {
		inv, err = a.svc.Restock(ctxOf(c), c.Query("sku"), stock)
	}
	if err != nil {
		a.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, inv)
}
