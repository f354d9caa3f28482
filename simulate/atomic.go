package simulate

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"seckill/store"
)

// atomicSale is the service's sale script for mode atomic, the very text package store sends.
var atomicSale = store.AtomicSaleSource()

// atomicKeys are the service's keys of the simulated SKU (store.KeysFor).
var atomicKeys = store.KeysFor("sku")

// atomicKind is mode atomic: no lock; each sale is one EVAL of the service's script, which
// decrements the stock only while it is above zero and records the order (store.AtomicSale). The
// resource is the Redis stock itself, so the checker judges it as the lab does (lab/scenarios.go
// driveAtomic, safeChecks): every sale acknowledged to a client is one decrement and one order
// (no lost update: sold = initial - stock), nothing is sold below zero (no oversell), a sold-out
// answer comes only when the stock is 0, and with no fault as many units sell as there are
// (stock left 0). A round of a client is one sale; the stock is one unit short of the sales tried,
// so every schedule reaches the sold-out branch.
type atomicKind struct{ base }

func (atomicKind) lockKey() string { return atomicKeys.Stock }

func (atomicKind) leftoverOK(key string) bool {
	return key == atomicKeys.Stock || key == atomicKeys.Orders || key == atomicKeys.ByInstance
}

// expects: a sale refused because the stock key is gone (a master restarted empty) is the
// buyer's answer.
func (atomicKind) expects(err error) bool { return strings.Contains(err.Error(), "NOSTOCK") }

// initial is the stock the run starts with.
func (atomicKind) initial(s *Sim) int64 { return max(1, int64(s.cfg.Clients*s.cfg.Rounds)-1) }

// setup stocks the SKU on the one Redis before the first step, as a reset does.
func (k atomicKind) setup(s *Sim, w *World) {
	s.gen++
	w.Masters[0].Gen = s.gen
	w.Masters[0].Data = redisState{{Key: atomicKeys.Stock, Type: "string", Str: itoa(k.initial(s))}}
}

// acquire is the whole sale: one EVAL. An error (no stock key, a master down) is the buyer's
// answer; nothing is sold and nothing retried, as in the service.
func (k atomicKind) acquire(s *Sim, w *World, c *Client) {
	order := fmt.Sprintf(`{"id":%q,"instance":%q,"lock":"atomic","token":0,"at":%d}`, c.acq(), "p"+strconv.Itoa(c.ID), epoch.UnixMilli()+w.Now)
	r, _ := s.script(w, c, 0, "AtomicSale", atomicSale, []string{atomicKeys.Stock, atomicKeys.Orders, atomicKeys.ByInstance},
		order, "p"+strconv.Itoa(c.ID)).([]any)
	if len(r) == 2 {
		sold, _ := asInt(r[0])
		left, _ := asInt(r[1])
		switch {
		case sold == 1 && left < 0 && w.Violation == "":
			w.Violation = fmt.Sprintf("oversold: %s bought a unit and the stock went to %d", c.acq(), left)
		case sold != 1 && left > 0 && w.Violation == "":
			w.Violation = fmt.Sprintf("sold out with stock left: %s was refused with %d in stock", c.acq(), left)
		}
		if sold == 1 {
			w.Res.Sold++
		}
	}
	c.Round++
	s.begin(w, c)
}

func (atomicKind) release(s *Sim, w *World, c *Client) {}

// settled is the lab's verdict on the Redis ledger once every client is done: the stock key is
// there, initial - stock = the orders recorded = the sales acknowledged = the per-instance
// counts, and with no fault the whole stock sold. A master that restarted empty fails the first
// (data loss: the stock and the record of every sale before it are gone).
func (k atomicKind) settled(s *Sim, w *World) string {
	var stock, orders, byInstance int64
	found := false
	for _, key := range w.Masters[0].Data {
		switch key.Key {
		case atomicKeys.Stock:
			stock, _ = strconv.ParseInt(key.Str, 10, 64)
			found = true
		case atomicKeys.Orders:
			orders = int64(len(key.List))
		case atomicKeys.ByInstance:
			for i := 1; i < len(key.Hash); i += 2 {
				n, _ := strconv.ParseInt(key.Hash[i], 10, 64)
				byInstance += n
			}
		}
	}
	sold, initial := int64(w.Res.Sold), k.initial(s)
	switch {
	case !found:
		return fmt.Sprintf("data loss: the stock key %s is gone from m0 (restarted empty): %d sale(s) acknowledged before are recorded by %d order(s), and every sale after it failed NOSTOCK", atomicKeys.Stock, sold, orders)
	case stock < 0 || sold > initial:
		return fmt.Sprintf("oversold: stock %d, %d sold of %d", stock, sold, initial)
	case orders != sold || byInstance != sold || initial-stock != sold:
		return fmt.Sprintf("lost update: %d sales acknowledged, %d orders, %d counted by instance, %d decrements (initial %d, stock %d)", sold, orders, byInstance, initial-stock, initial, stock)
	case w.FaultsUsed == 0 && stock != 0:
		return fmt.Sprintf("stock left: %d of %d unsold after %d sales tried with no fault", stock, initial, s.cfg.Clients*s.cfg.Rounds)
	}
	return ""
}

func init() { kinds["atomic"] = atomicKind{} }
