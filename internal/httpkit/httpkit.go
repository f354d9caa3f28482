// Package httpkit is what every route of the service shares, the API's and the lab's mounted
// beside it: the error body, the kit a mounted route set is given, and the parsers of query
// parameters whose mistakes are answered 400 (service.ErrBadRequest) in the same words.
package httpkit

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/service"
)

// ErrorBody is every error answer: what went wrong, in words, and the status repeated.
type ErrorBody struct {
	Error      string   `json:"error" example:"unknown lock mode \"foo\""`
	Status     int      `json:"status" example:"400"`
	ValidModes []string `json:"validModes,omitempty"`
} //	@name	handler.ErrorBody

// Kit is what mounted routes share with the API.
type Kit struct {
	// Admin requires X-Admin-Token when server.adminToken is set (401 otherwise).
	Admin gin.HandlerFunc
	// Fail answers a service error with its status, as every handler does.
	Fail func(c *gin.Context, err error)
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

// BadRequest is a 400: service.ErrBadRequest with what was wrong.
func BadRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", service.ErrBadRequest, fmt.Sprintf(format, args...))
}

// OnlyParams refuses query parameters other than accepted, and any given more than once: an
// ambiguous request is refused rather than half understood.
func OnlyParams(q url.Values, accepted ...string) error {
	for name, vals := range q {
		if !slices.Contains(accepted, name) {
			if len(accepted) == 0 {
				return BadRequest("unknown parameter %s; this endpoint takes none", Name(name))
			}
			return BadRequest("unknown parameter %s; accepted: %s", Name(name), strings.Join(accepted, ", "))
		}
		if len(vals) > 1 {
			return BadRequest("parameter %s is given %d times", name, len(vals))
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
		return 0, BadRequest("%s=%s is too large: the limit is %d", name, Quote(v), int64(math.MaxInt64))
	}
	if err != nil {
		return 0, BadRequest("%s=%s is not a whole number", name, Quote(v))
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
		return 0, BadRequest("%s must not be negative", name)
	}
	if n > int64(24*time.Hour/time.Millisecond) {
		return 0, BadRequest("%s=%d is too large", name, n)
	}
	return time.Duration(n) * time.Millisecond, nil
}
