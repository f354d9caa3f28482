package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill-lab/seckill/lock"

	"seckill/store"
)

// ErrCheckoutFull: checkout.limit buyers of the SKU are in checkout, and none left within
// checkout.wait. Nothing was read or written; the buyer may try again shortly.
var ErrCheckoutFull = errors.New("checkout full")

// The checkout events an Observer is told of.
const (
	CheckoutEnter = "enter" // a buyer took a checkout permit
	CheckoutLeave = "leave" // a buyer is giving its permit back
	CheckoutFull  = "full"  // a buyer got no permit within checkout.wait
)

// SetCheckout installs the semaphore whose permits bound the buyers in checkout
// (Settings.CheckoutLimit of them for each SKU). Without one, or with a limit of 0, a sale takes
// no permit.
func (s *Service) SetCheckout(sem *lock.ExpirableSemaphore) { s.checkout = sem }

// checkoutOn reports whether a sale takes a checkout permit.
func (s *Service) checkoutOn() bool { return s.checkout != nil && s.set.CheckoutLimit > 0 }

// checkoutName names the checkout semaphore of sku.
func (s *Service) checkoutName(sku string) string {
	return store.KeysFor(sku).CheckoutOf(s.set.CheckoutLimit)
}

// enterCheckout takes a checkout permit of sku, waiting up to checkout.wait, and returns what
// gives it back. The permit's lease ends with the sale's deadline (ctx's) plus the time a release
// may take, so a process that dies while holding it gives it back by then. A semaphore missing
// from Redis (a fresh Redis, or one that restarted empty) is set to the limit on the way.
func (s *Service) enterCheckout(ctx context.Context, sku, mode string) (leave func(), err error) {
	if !s.checkoutOn() {
		return func() {}, nil
	}
	name := s.checkoutName(sku)
	lease := releaseWithin
	if deadline, ok := ctx.Deadline(); ok {
		lease += time.Until(deadline)
	}
	permit, err := s.checkout.TryAcquire(ctx, name, lease)
	if errors.Is(err, lock.ErrNotObtained) && ctx.Err() == nil {
		if _, err = s.checkout.TrySetPermits(ctx, name, s.set.CheckoutLimit); err == nil {
			permit, err = s.checkout.Acquire(ctx, name, s.set.CheckoutWait, lease)
		}
	}
	if err != nil {
		return nil, s.checkoutError(err, sku, mode, name)
	}
	s.observer.ObserveCheckout(sku, CheckoutEnter)
	return func() {
		s.observer.ObserveCheckout(sku, CheckoutLeave)
		// Given back even when the buyer went away or the sale failed: a permit kept is a buyer
		// fewer for everyone until its lease ends. It is given back beside the buyer's answer,
		// never in it: a frozen Redis must not hold back a sale already made (or refused). A
		// release Redis did not answer goes on by the library's give-back policy.
		go func() {
			relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin)
			defer cancel()
			switch err := permit.Release(relCtx); {
			case err == nil:
			case errors.Is(err, lock.ErrNotHeld):
				s.log.Warn("checkout permit ended before its release", "permit", name, "err", err)
			default:
				s.log.Warn("checkout permit: its release goes on in the background, or it ends with its lease", "permit", name, "lease", lease, "err", err)
			}
		}()
	}, nil
}

// checkoutError is what a buyer is told when it got no checkout permit.
func (s *Service) checkoutError(err error, sku, mode, name string) error {
	switch {
	case errors.Is(err, lock.ErrUnavailable):
		s.log.Error("checkout permit", "permit", name, "err", err)
		return hide(fmt.Sprintf("%s: the data Redis did not answer for a checkout permit (the log says why)", ErrUnavailable), ErrUnavailable, err)
	case errors.Is(err, lock.ErrNotObtained) && errors.Is(err, lock.ErrClosed):
		return hide(fmt.Sprintf("%s: the service is shutting down", ErrUnavailable), ErrUnavailable, err)
	case errors.Is(err, lock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		s.observer.ObserveCheckout(sku, CheckoutFull)
		s.observer.ObserveSale(mode, "checkout-full", 0, 0)
		return hide(fmt.Sprintf("%s: %d buyers of %s are in checkout (checkout.limit), none left within %s; try again shortly",
			ErrCheckoutFull, s.set.CheckoutLimit, sku, s.set.CheckoutWait), ErrCheckoutFull, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		s.log.Warn("checkout permit", "permit", name, "err", err)
		return hide(fmt.Sprintf("%s: no checkout permit before the request ended", ErrUnavailable), ErrUnavailable, err)
	default:
		s.log.Error("checkout permit", "permit", name, "err", err)
		return fmt.Errorf("checkout permit of %s: %w", sku, err)
	}
}

// CheckoutView is the checkout limit of one SKU in GET /locks.
type CheckoutView struct {
	// Semaphore names the expirable semaphore on the data Redis; its limit is part of the name.
	Semaphore string `json:"semaphore" example:"{inventory001}:checkout:256"`
	Limit     int    `json:"limit" example:"256"`
	WaitMs    int64  `json:"waitMs" example:"1000"`
	// Available is the permits free now, once those whose lease ended are back (-1: not read).
	Available int `json:"available" example:"256"`
	// Error says why the permits could not be counted.
	Error string `json:"error,omitempty"`
}

// EnsureCheckout sets the checkout semaphore of every SKU to checkout.limit where it is not set
// yet (at start, so GET /locks counts its permits from the first moment); one already set keeps
// its count. A sale sets a semaphore that went missing since.
func (s *Service) EnsureCheckout(ctx context.Context) error {
	if !s.checkoutOn() {
		return nil
	}
	for _, sku := range s.SKUs() {
		if _, err := s.checkout.TrySetPermits(ctx, s.checkoutName(sku), s.set.CheckoutLimit); err != nil {
			return fmt.Errorf("set the checkout permits of %s: %w", sku, err)
		}
	}
	return nil
}

// checkoutView reads the checkout limit of sku; nil when there is none.
func (s *Service) checkoutView(ctx context.Context, sku string) *CheckoutView {
	if !s.checkoutOn() {
		return nil
	}
	v := &CheckoutView{Semaphore: s.checkoutName(sku), Limit: s.set.CheckoutLimit,
		WaitMs: s.set.CheckoutWait.Milliseconds()}
	n, err := s.checkout.AvailablePermits(ctx, v.Semaphore)
	if err != nil {
		s.log.Error("count checkout permits", "permit", v.Semaphore, "err", err)
		v.Error, n = "the checkout permits could not be counted", -1
	}
	v.Available = n
	return v
}
