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

// SaleHook is called at a sale's steps from outside it: the lab installs one that injects the
// faults a request asked for (seckill/lab), so that the sale itself knows only selling.
type SaleHook interface {
	// Begin is called once the sale's lock mode is known and its posture checked, before it
	// takes its place among the sales in flight: it may refuse the sale (an error the handler
	// maps like the service's own), and returns the context the sale runs in and its steps.
	Begin(ctx context.Context, mode modes.Mode) (context.Context, SaleSteps, error)
}

// SaleSteps are what a SaleHook does at one sale's steps.
type SaleSteps interface {
	// Within is how much longer than its lock wait the steps may make the sale.
	Within() time.Duration
	// Separate reports whether the steps act between the commit and the release, which then go
	// out apart (otherwise they go out together, in one round trip).
	Separate() bool
	// Failed is told why the lock was not obtained and returns the error the sale ends with
	// (err, or one that says the holder crashed on the way: ErrCrashed).
	Failed(err error) error
	// Locked runs once the lock is held on key. An error ends the sale there, its lock never
	// released (a holder that crashed: ErrCrashed).
	Locked(ctx context.Context, key string) error
	// Read runs once the stock is read and above zero, before the lease is checked (the
	// business time); an error (the context's) ends the sale unsold.
	Read(ctx context.Context) error
	// Checked runs once the lease is checked, just before the write (where a stop-the-world
	// pause does its damage).
	Checked(ctx context.Context)
}

// noSteps are a sale's steps without a hook.
type noSteps struct{}

func (noSteps) Within() time.Duration                { return 0 }
func (noSteps) Separate() bool                       { return false }
func (noSteps) Failed(err error) error               { return err }
func (noSteps) Locked(context.Context, string) error { return nil }
func (noSteps) Read(context.Context) error           { return nil }
func (noSteps) Checked(context.Context)              {}

// SetHook installs the lab's sale hook (lab/labapp does, when lab.enabled).
func (s *Service) SetHook(h SaleHook) { s.hook = h }

// labParams names the parameters a request carries that only the lab serves: those its parser
// saw, whatever their value, else (a request built in code) an explicit lease.
func labParams(req SaleRequest) []string {
	if req.LabParams != nil {
		return req.LabParams
	}
	if req.Lease != 0 {
		return []string{modes.FaultExplicitLease}
	}
	return nil
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
	if f := labParams(req); len(f) > 0 {
		why = append(why, "fault parameter "+strings.Join(f, ", ")+" is the lab's")
	}
	if len(why) == 0 {
		return nil
	}
	if !s.set.LabEnabled || s.hook == nil && len(labParams(req)) > 0 {
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
