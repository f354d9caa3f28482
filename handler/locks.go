package handler

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/httpkit"
)

// getMultiLock godoc
//
//	@Summary		Hold the multilock on every master (the multilock demo)
//	@Description	Takes the multilock of the default SKU (one Redisson-layout reentrant lock on each
//	@Description	master, all required), holds it holdSeconds while reading its PTTL on every master,
//	@Description	then releases it. The samples fall and jump back up every lease/3: the watchdog
//	@Description	renewing each master. Allowed without the lab; bounded by lab.maxWork; needs the admin token when set,
//	@Description	and then POST (a GET is 405).
//	@Tags			locks
//	@Produce		json
//	@Param			holdSeconds		query		int		false	"how long to hold, in whole seconds (default 30, at most lab.maxWork)"	minimum(0)
//	@Param			X-Admin-Token	header		string	false	"required when server.adminToken is set"
//	@Success		200				{object}	service.MultiLockHold
//	@Failure		400				{object}	httpkit.ErrorBody	"holdSeconds not a whole number, negative or above lab.maxWork"
//	@Failure		401				{object}	httpkit.ErrorBody	"admin token missing or wrong"
//	@Failure		405				{object}	httpkit.ErrorBody	"GET while server.adminToken is set"
//	@Failure		503				{object}	httpkit.ErrorBody	"lock not obtained within lock.wait, or a master unavailable (Retry-After)"
//	@Router			/getMultiLock [get]
//	@Router			/getMultiLock [post]
func (a *API) getMultiLock(c *gin.Context) {
	if err := httpkit.OnlyParams(c.Request.URL.Query(), "holdSeconds"); err != nil {
		a.fail(c, err)
		return
	}
	hold := time.Duration(-1)
	if v, ok := c.GetQuery("holdSeconds"); ok {
		n, err := httpkit.ParseInt("holdSeconds", v)
		if err == nil && n < 0 {
			err = httpkit.BadRequest("holdSeconds must not be negative")
		}
		if err == nil && n > int64(24*time.Hour/time.Second) {
			err = httpkit.BadRequest("holdSeconds=%d is too large", n)
		}
		if err != nil {
			a.fail(c, err)
			return
		}
		hold = time.Duration(n) * time.Second
	}
	res, err := a.svc.HoldMultiLock(ctxOf(c), hold)
	if err != nil {
		a.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// locks godoc
//
//	@Summary		The lock keys of a SKU, everywhere (read-only)
//	@Description	For the data Redis and every master: each key under {sku}:lock: with its type, PTTL
//	@Description	(-1: no TTL), the value of a string lock, or the holder fields and hold counts of a
//	@Description	Redisson-layout hash; plus the newest fencing token accepted, and the checkout limit
//	@Description	with the permits free now (checkout.limit; absent when it is 0). A server that does not
//	@Description	answer is reported in its entry.
//	@Tags			locks
//	@Produce		json
//	@Param			sku	query		string	false	"SKU (default inventory.key)"
//	@Success		200	{object}	service.LocksView
//	@Failure		404	{object}	httpkit.ErrorBody	"unknown SKU"
//	@Router			/locks [get]
func (a *API) locks(c *gin.Context) {
	v, err := a.svc.LockKeys(ctxOf(c), c.Query("sku"))
	if err != nil {
		a.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}
