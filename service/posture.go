package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"seckill/internal/modes"
	"seckill/store"
)

// More errors of the service, mapped to HTTP statuses by the handler.
var (
	// ErrNeedsOperator: the request asks for something only the operator may do (a mode outside
	// lock.allowedModes, a fault, a restock) and did not prove to be the operator.
	ErrNeedsOperator = errors.New("this request needs the operator (header X-Admin-Token)")
	// ErrNoStock: the SKU's stock key does not exist on the data Redis (it restarted empty, or
	// the key was deleted). An operational fault: the operator restocks.
	ErrNoStock = errors.New("no stock key")
	// ErrOverloaded: server.maxInFlight sales are already being served.
	ErrOverloaded = errors.New("too many sales in flight")
	// ErrDeadlock: the lock key has no expiry and will never be freed by itself.
	ErrDeadlock = errors.New("deadlock")
)

// FaultPlan lists the faults a sale meets inside the lock's own steps.
type FaultPlan struct {
	CrashBeforeExpire bool
	PauseBeforeDel    time.Duration
}

// FaultHolder is the fault state of one sale: the lab kills or pauses it through its Redis
// connection (seckill/lab/fault implements it).
type FaultHolder interface {
	Crash()
	Crashed() bool
	Freeze(ctx context.Context, d time.Duration)
}

// FaultInjector attaches a FaultHolder to a sale's context. The service has none unless app
// wires the lab's in (lab.enabled): then, and only then, fault parameters are served.
type FaultInjector interface {
	Attach(ctx context.Context, plan FaultPlan) (context.Context, FaultHolder)
}

// SetFaults installs the lab's fault injector (app does, when lab.enabled).
func (s *Service) SetFaults(f FaultInjector) { s.faults = f }

// faultParams names the fault parameters a request carries: those its parser saw, whatever their
// value, else (a request built in code) those with a value.
func faultParams(req SaleRequest) []string {
	if req.FaultParams != nil {
		return req.FaultParams
	}
	var out []string
	for _, f := range []struct {
		name  string
		given bool
	}{{modes.FaultWork, req.Work != 0}, {modes.FaultHolderPause, req.Freeze != 0},
		{modes.FaultPauseBeforeDel, req.PauseBeforeDel != 0}, {modes.FaultExplicitLease, req.Lease != 0},
		{"crash", req.Crash != ""}} {
		if f.given {
			out = append(out, f.name)
		}
	}
	return out
}

// checkPosture refuses what the public posture does not serve, before anything reaches Redis: a
// mode outside lock.allowedModes or a fault parameter needs the lab (lab.enabled), and, when an
// admin token is set, the operator.
func (s *Service) checkPosture(req SaleRequest, mode modes.Mode) error {
	var why []string
	if s.set.AllowedModes != nil && !slices.Contains(s.set.AllowedModes, mode.Name) {
		why = append(why, fmt.Sprintf("lock mode %s is not in lock.allowedModes (%s)",
			mode.Name, strings.Join(s.set.AllowedModes, ", ")))
	}
	if f := faultParams(req); len(f) > 0 {
		why = append(why, "fault parameter "+strings.Join(f, ", ")+" is the lab's")
	}
	if len(why) == 0 {
		return nil
	}
	if !s.set.LabEnabled || s.faults == nil && len(faultParams(req)) > 0 {
		return fmt.Errorf("%w: %w: refused: %s", ErrBadRequest, ErrLabDisabled, strings.Join(why, "; "))
	}
	if s.set.OperatorRequired && !req.Operator {
		return fmt.Errorf("%w: refused: %s", ErrNeedsOperator, strings.Join(why, "; "))
	}
	return nil
}

// enter takes a place among the sales in flight, or says the service is full.
func (s *Service) enter() (leave func(), err error) {
	if s.inflight == nil {
		return func() {}, nil
	}
	select {
	case s.inflight <- struct{}{}:
		return func() { <-s.inflight }, nil
	default:
		return nil, fmt.Errorf("%w: %d sales are being served (server.maxInFlight); try again shortly",
			ErrOverloaded, cap(s.inflight))
	}
}

// Restock sets the stock of sku ("" = the default SKU) to stock, whatever the lab switch says: the
// operator's way back when the stock key is missing (the data Redis restarted empty) or to put
// more on sale. It keeps the orders and the lock keys, and moves the initial stock by as much as
// the stock moved, so the audit (sold, lost updates) stays true.
func (s *Service) Restock(ctx context.Context, sku string, stock int64) (store.Inventory, error) {
	sku, err := s.resolveSKU(sku)
	if err != nil {
		return store.Inventory{}, err
	}
	if stock < 0 || stock > s.set.MaxStock {
		return store.Inventory{}, fmt.Errorf("%w: stock %d is out of range 0..%d", ErrBadRequest, stock, s.set.MaxStock)
	}
	if err := s.store.Restock(ctx, sku, stock); err != nil {
		return store.Inventory{}, s.storeError(err)
	}
	s.log.Warn("inventory restocked by the operator", "sku", sku, "stock", stock)
	return s.Inventory(ctx, sku)
}

// deadlockHint names a lock key left without an expiry, if that is why the wait ran out.
func (s *Service) deadlockHint(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	ttl, err := s.store.PTTL(ctx, key)
	if err != nil || ttl != -1 {
		return nil
	}
	return fmt.Errorf("%w: lock key %s has no expiry: its holder died before setting one, and nobody will free it; "+
		"it clears only when deleted (POST /inventory/reset with the lab on, or DEL %s on the data Redis)", ErrDeadlock, key, key)
}
