// Package handler is the HTTP side: it binds requests, calls the service and writes JSON. The
// rules live in service/; nothing below this package sees a *gin.Context.
package handler

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/httpkit"
	"seckill/internal/modes"
	"seckill/metrics"
	"seckill/service"
	"seckill/store"
)

// Options configure the router.
type Options struct {
	AdminToken string
	// MaxBody bounds request bodies; larger ones are 413.
	MaxBody int64
	Logger  *slog.Logger
	// Metrics, when set, is served at /metrics.
	Metrics *metrics.Metrics
	// Mount, when set, adds routes beside the API's own: app mounts the lab's here
	// (seckill/lab/labhttp). kit gives them the API's admin guard and error answers.
	Mount func(r gin.IRouter, kit httpkit.Kit)
	// BenchReport is the bench report /bench draws; "" means the last `seckill bench` run on
	// this machine (benchreport.LastRunPath of the process's environment).
	BenchReport string
}

// Shop is what the sale, inventory, reset and health handlers need of the service.
type Shop interface {
	Sale(ctx context.Context, req service.SaleRequest) (service.SaleResult, error)
	Inventory(ctx context.Context, sku string) (store.Inventory, error)
	InventoryAll(ctx context.Context) ([]store.Inventory, error)
	Reset(ctx context.Context, sku string, stock int64) (store.Inventory, error)
	Restock(ctx context.Context, sku string, stock int64) (store.Inventory, error)
	SKUs() []string
	Settings() service.Settings
	Ready(ctx context.Context) (map[string]string, error)
}

// LockViews is what /locks and /getMultiLock need of the service.
type LockViews interface {
	LockKeys(ctx context.Context, sku string) (service.LocksView, error)
	HoldMultiLock(ctx context.Context, hold time.Duration) (service.MultiLockHold, error)
}

// Service is everything the handlers use of the service: a *service.Service, or a fake in tests.
type Service interface {
	Shop
	LockViews
}

var _ Service = (*service.Service)(nil)

// API holds the handlers' dependencies.
type API struct {
	svc Service
	opt Options
	log *slog.Logger
}

// SaleBody is the answer of /inventory/sale for every status: the sale result, and on failure
// the error.
type SaleBody struct {
	service.SaleResult
	// Error and Status are those of every endpoint's error answer; a sale that was tried and
	// failed (sold out, a stale write, no lock within the wait, Redis down) also says what it saw.
	Error  string `json:"error,omitempty"`
	Status int    `json:"status,omitempty"`
}

// statusOf maps service errors to HTTP statuses, in one table.
func statusOf(err error) int {
	for _, m := range []struct {
		err    error
		status int
	}{
		{service.ErrBadRequest, http.StatusBadRequest},
		{service.ErrNotFound, http.StatusNotFound},
		{service.ErrLabDisabled, http.StatusForbidden},
		{service.ErrNeedsOperator, http.StatusUnauthorized},
		{service.ErrNoStock, http.StatusServiceUnavailable},
		{service.ErrOverloaded, http.StatusServiceUnavailable},
		{service.ErrCheckoutFull, http.StatusServiceUnavailable},
		{service.ErrSoldOut, http.StatusConflict},
		{service.ErrStaleWrite, http.StatusConflict},
		{service.ErrRestocked, http.StatusConflict},
		{service.ErrLockTimeout, http.StatusServiceUnavailable},
		{service.ErrUnavailable, http.StatusServiceUnavailable},
		{service.ErrLockLost, http.StatusServiceUnavailable},
		{service.ErrCorrupt, http.StatusInternalServerError},
		{service.ErrCrashed, http.StatusInternalServerError},
	} {
		if errors.Is(err, m.err) {
			return m.status
		}
	}
	return http.StatusInternalServerError
}

// message is what a user may read of err: internal errors are logged, not shown.
func (a *API) message(err error, status int) string {
	if status == http.StatusInternalServerError && !errors.Is(err, service.ErrCorrupt) && !errors.Is(err, service.ErrCrashed) {
		a.log.Error("internal error", "err", err)
		return "internal error"
	}
	return capMessage(err.Error())
}

// maxMessage bounds an error message: with the parameters quoted short (Quote), only a long
// chain of causes could pass it.
const maxMessage = 700

func capMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "…"
}

func (a *API) fail(c *gin.Context, err error) {
	status := statusOf(err)
	body := httpkit.ErrorBody{Error: a.message(err, status), Status: status}
	if errors.Is(err, modes.ErrUnknownMode) {
		body.ValidModes = modes.Names()
	}
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	c.AbortWithStatusJSON(status, body)
}

// ctxOf gives the service the request's context, never the gin.Context itself.
func ctxOf(c *gin.Context) context.Context { return c.Request.Context() }
