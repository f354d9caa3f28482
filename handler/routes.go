package handler

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	swaggerFiles "github.com/swaggo/files"
	ginSwagger "github.com/swaggo/gin-swagger"

	_ "seckill/docs" // the generated OpenAPI document served by Swagger UI
	"seckill/internal/httpkit"
)

// New builds the whole HTTP API; every route is listed here.
func New(svc Service, opt Options) http.Handler {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MaxBody <= 0 {
		opt.MaxBody = 1 << 20
	}
	a := &API{svc: svc, opt: opt, log: opt.Logger}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery(), a.limitBody, a.plainQuery)
	r.HandleMethodNotAllowed = true
	// The path is quoted short (Quote): an answer never echoes a long one back.
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, httpkit.ErrorBody{Error: "no such endpoint: " + httpkit.Name(c.Request.URL.Path), Status: http.StatusNotFound})
	})
	r.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, httpkit.ErrorBody{Error: "method " + httpkit.Name(c.Request.Method) + " is not allowed on " + httpkit.Name(c.Request.URL.Path), Status: http.StatusMethodNotAllowed})
	})

	r.GET("/inventory/sale", a.sale)
	r.POST("/inventory/sale", a.sale)
	r.GET("/inventory", a.inventory)
	r.POST("/inventory/reset", a.labOnly, a.admin, a.reset)
	r.POST("/inventory/restock", a.operator, a.restock)
	r.GET("/healthz", a.healthz)
	r.GET("/readyz", a.readyz)
	// It holds the multilock on every master for up to lab.maxWork: a lab tool, guarded like one.
	r.GET("/getMultiLock", a.noGetWithToken, a.admin, a.getMultiLock)
	r.POST("/getMultiLock", a.admin, a.getMultiLock)
	r.GET("/locks", a.locks)
	r.GET("/swagger/*any", ginSwagger.WrapHandler(swaggerFiles.Handler))
	if opt.Metrics != nil {
		r.GET("/metrics", serveMetrics(opt.Metrics.Handler()))
	}

	if opt.Mount != nil {
		opt.Mount(r, httpkit.Kit{Admin: a.admin, Fail: a.fail})
	}
	r.GET("/", dashboard)
	r.GET("/dashboard/*file", dashboardAsset)
	r.GET("/bench", a.lastBench)
	return r
}

// limitBody refuses bodies larger than MaxBody with 413, before any handler reads them.
func (a *API) limitBody(c *gin.Context) {
	if c.Request.ContentLength > a.opt.MaxBody {
		c.AbortWithStatusJSON(http.StatusRequestEntityTooLarge,
			httpkit.ErrorBody{Error: "request body too large", Status: http.StatusRequestEntityTooLarge})
		return
	}
	// A body of unknown length (chunked) could only be measured by reading it, and no endpoint
	// takes a body: refuse it instead of letting an oversized one through unread.
	if c.Request.ContentLength < 0 {
		c.AbortWithStatusJSON(http.StatusLengthRequired, httpkit.ErrorBody{
			Error:  "request body without Content-Length (chunked) is not accepted; parameters go in the query string",
			Status: http.StatusLengthRequired})
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, a.opt.MaxBody)
	c.Next()
}

// plainQuery refuses a query string Go's parser cannot read whole (a ';', a bad %-escape): the
// parser drops what it cannot read, so "?lock=none;" would sell under the default mode. An
// ambiguous request is refused (400) before anything reaches Redis.
func (a *API) plainQuery(c *gin.Context) {
	if _, err := url.ParseQuery(c.Request.URL.RawQuery); err != nil {
		why := "it cannot be read whole"
		if strings.Contains(c.Request.URL.RawQuery, ";") {
			why = "';' does not separate parameters here; use '&' (or %3B inside a value)"
		}
		a.fail(c, httpkit.BadRequest("ambiguous query string %s: %s", httpkit.Quote(c.Request.URL.RawQuery), why))
		return
	}
	c.Next()
}

// labOnly refuses the request with 403 when lab.enabled is false: reset and the lab endpoints
// are for a laboratory, not for a public deployment.
func (a *API) labOnly(c *gin.Context) {
	if !a.svc.Settings().LabEnabled {
		c.AbortWithStatusJSON(http.StatusForbidden, httpkit.ErrorBody{
			Error: c.Request.URL.Path + " is disabled because lab.enabled is false", Status: http.StatusForbidden})
		return
	}
	c.Next()
}

// admin requires X-Admin-Token when server.adminToken is set (compared in constant time).
func (a *API) admin(c *gin.Context) {
	if a.opt.AdminToken == "" {
		c.Next()
		return
	}
	got := c.GetHeader("X-Admin-Token")
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.opt.AdminToken)) != 1 {
		c.AbortWithStatusJSON(http.StatusUnauthorized,
			httpkit.ErrorBody{Error: "this endpoint needs the X-Admin-Token header (server.adminToken)", Status: http.StatusUnauthorized})
		return
	}
	c.Next()
}

// isOperator reports whether the request comes from the operator: it carries the admin token, or
// none is set (a laptop, where everyone is).
func (a *API) isOperator(c *gin.Context) bool {
	if a.opt.AdminToken == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(c.GetHeader("X-Admin-Token")), []byte(a.opt.AdminToken)) == 1
}

// operator guards what the operator may do whatever the lab switch says (restock): the admin
// token when one is set; without one, only a laptop's lab may.
func (a *API) operator(c *gin.Context) {
	if a.opt.AdminToken == "" && !a.svc.Settings().LabEnabled {
		c.AbortWithStatusJSON(http.StatusForbidden, httpkit.ErrorBody{
			Error:  c.Request.URL.Path + " needs the operator: set server.adminToken (SECKILL_SERVER_ADMINTOKEN) and send it as X-Admin-Token",
			Status: http.StatusForbidden})
		return
	}
	a.admin(c)
}

// noGetWithToken refuses a GET that changes state while an admin token is set (use POST).
func (a *API) noGetWithToken(c *gin.Context) {
	if a.opt.AdminToken != "" {
		c.Header("Allow", http.MethodPost)
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, httpkit.ErrorBody{
			Error:  c.Request.URL.Path + " changes state: use POST (GET is refused while server.adminToken is set)",
			Status: http.StatusMethodNotAllowed})
		return
	}
	c.Next()
}

// serveMetrics godoc
//
//	@Summary		Prometheus metrics
//	@Description	The Prometheus text format: sales by lock mode and result, lock wait and hold times,
//	@Description	watchdog renewals and failures, stale writes rejected, foreign unlocks, lab runs by
//	@Description	verdict (the seckill_* series), and the Go runtime's. docs/operations.md lists them.
//	@Tags			health
//	@Produce		plain
//	@Success		200	{string}	string	"the metrics, one sample a line"
//	@Router			/metrics [get]
func serveMetrics(h http.Handler) gin.HandlerFunc { return gin.WrapH(h) }
