// Package handler is the HTTP side: it binds requests, calls the service and writes JSON. The
// rules live in service/; nothing below this package sees a *gin.Context.
package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

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
	Mount func(r gin.IRouter, kit Kit)
	// BenchReport is the bench report /bench draws; "" means the last `seckill bench` run on
	// this machine (bench.LastRunPath of the process's environment).
	BenchReport string
}

// Kit is what mounted routes share with the API.
type Kit struct {
	// Admin requires X-Admin-Token when server.adminToken is set (401 otherwise).
	Admin gin.HandlerFunc
	// Fail answers a service error with its status, as every handler does.
	Fail func(c *gin.Context, err error)
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

// ErrorBody is every error answer: what went wrong, in words, and the status repeated.
type ErrorBody struct {
	Error      string   `json:"error" example:"unknown lock mode \"foo\""`
	Status     int      `json:"status" example:"400"`
	ValidModes []string `json:"validModes,omitempty"`
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

// maxQuoted is how much of a bad value an error message quotes.
const maxQuoted = 40

// Name shows a parameter's name in an error message: as it is when short and plain, else quoted
// and cut (Quote).
func Name(v string) string {
	if len(v) > maxQuoted || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' }) >= 0 {
		return Quote(v)
	}
	return v
}

// Quote quotes a value for an error message, cut to its first maxQuoted bytes: an answer never
// echoes a large bad value back.
func Quote(v string) string {
	if len(v) <= maxQuoted {
		return strconv.Quote(v)
	}
	return strconv.Quote(strings.ToValidUTF8(v[:maxQuoted], "")) + fmt.Sprintf("… (%d bytes)", len(v))
}

func (a *API) fail(c *gin.Context, err error) {
	status := statusOf(err)
	body := ErrorBody{Error: a.message(err, status), Status: status}
	if errors.Is(err, modes.ErrUnknownMode) {
		body.ValidModes = modes.Names()
	}
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	c.AbortWithStatusJSON(status, body)
}

// OnlyParams refuses query parameters other than accepted, and any given more than once: an
// ambiguous request is refused rather than half understood.
func OnlyParams(q url.Values, accepted ...string) error {
	for name, vals := range q {
		if !slices.Contains(accepted, name) {
			if len(accepted) == 0 {
				return badRequest("unknown parameter %s; this endpoint takes none", Name(name))
			}
			return badRequest("unknown parameter %s; accepted: %s", Name(name), strings.Join(accepted, ", "))
		}
		if len(vals) > 1 {
			return badRequest("parameter %s is given %d times", name, len(vals))
		}
	}
	return nil
}

// QueryInt parses a whole-number query parameter; absent gives def.
func QueryInt(c *gin.Context, name string, def int64) (int64, error) {
	v, ok := c.GetQuery(name)
	if !ok {
		return def, nil
	}
	return ParseInt(name, v)
}

// ParseInt parses the whole-number parameter name: a bad value is a 400 that says whether it is
// not a number or beyond what any parameter takes.
func ParseInt(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, badRequest("%s=%s is too large: the limit is %d", name, Quote(v), int64(math.MaxInt64))
	}
	if err != nil {
		return 0, badRequest("%s=%s is not a whole number", name, Quote(v))
	}
	return n, nil
}

// ParseMillis parses a duration in whole milliseconds, 0 to 24 h.
func ParseMillis(name, v string) (time.Duration, error) {
	n, err := ParseInt(name, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, badRequest("%s must not be negative", name)
	}
	if n > int64(24*time.Hour/time.Millisecond) {
		return 0, badRequest("%s=%d is too large", name, n)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// ctxOf gives the service the request's context, never the gin.Context itself.
func ctxOf(c *gin.Context) context.Context { return c.Request.Context() }
