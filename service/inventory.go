// Package service holds the rules of the seckill sale: read the stock, check it, write stock-1
// and record the order, inside whichever lock mode the request chose. It talks to Redis only
// through store.Store and the lock package's Locker interface.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/modes"
	"seckill/store"
)

// Errors of the service, mapped to HTTP statuses by the handler. Check with errors.Is.
var (
	ErrBadRequest  = errors.New("bad request")
	ErrNotFound    = errors.New("not found")
	ErrLabDisabled = errors.New("the lab is disabled (lab.enabled=false)")
	ErrSoldOut     = errors.New("sold out")
	ErrLockTimeout = errors.New("lock not obtained within the wait")
	ErrUnavailable = errors.New("redis unavailable")
	ErrCorrupt     = errors.New("stock value is corrupt")
	ErrCrashed     = errors.New("the holder crashed (injected fault)")
	ErrLockLost    = errors.New("the lock was lost before the write")
	ErrStaleWrite  = errors.New("stale write rejected by the fencing token")
	// ErrRestocked: the operator restocked (or reset) the stock between the sale's read and its
	// write; nothing was sold, so the restock stands as set.
	ErrRestocked = errors.New("the stock was restocked during the sale")
)

// Settings are the parts of the configuration the service needs.
type Settings struct {
	Instance string
	SKU      string   // the default SKU (inventory.key)
	SKUs     []string // every SKU on sale, the default included (inventory.skus); nil = only SKU
	Stock    int64    // what a reset puts in by default
	Mode     string   // the default lock mode
	// Wait bounds each sale's wait for its lock (lock.wait); the lease is the mode's Locker's
	// (lock.lease, app.LockOptions), unless a sale asks for an explicit one.
	Wait         time.Duration
	LabEnabled   bool
	MaxWork      time.Duration
	MaxFreeze    time.Duration
	MaxPause     time.Duration
	MaxLease     time.Duration
	MaxStock     int64
	TrackOverlap bool // count buyers inside the critical section (two extra INCR/DECR per sale)
	// AllowedModes are the modes a sale may use without the lab (lock.allowedModes); nil: all.
	AllowedModes []string
	// OperatorRequired: an admin token is set, so what needs the lab also needs SaleRequest.Operator.
	OperatorRequired bool
	// MaxInFlight bounds the sales served at once (server.maxInFlight); 0: unbounded.
	MaxInFlight int
	// RFencedLayout: mode fenced keeps Redisson RFencedLock's layout (lock.fencedLayout=redisson),
	// so its tokens come from that layout's counter.
	RFencedLayout bool
	// CheckoutLimit bounds the buyers of one SKU in checkout at once, across every instance
	// (checkout.limit; checkout.go); 0: no limit. CheckoutWait bounds a buyer's wait for a permit.
	CheckoutLimit int
	CheckoutWait  time.Duration
}

// Pinger is anything whose health /readyz checks.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Noter is a Pinger with something to say beside its "ok" (an in-memory Redis says so).
type Noter interface{ Note() string }

// Service sells stock under a lock.
type Service struct {
	store    *store.Store
	locks    *modes.Registry
	set      Settings
	log      *slog.Logger
	pingers  map[string]Pinger
	observer Observer
	hook     SaleHook                 // the lab's, or nil
	inflight chan struct{}            // one token per sale in flight; nil: unbounded
	checkout *lock.ExpirableSemaphore // the checkout permits (SetCheckout), or nil
}

// Observer receives what happened in each sale (metrics hook). Implementations must be cheap.
type Observer interface {
	ObserveSale(mode, result string, wait, hold time.Duration)
	ObserveStaleWrite(mode string)
	ObserveForeignUnlock(mode string)
	ObserveRenewals(mode string, n int64)
	ObserveLeaseLost(mode string)
	// ObserveCheckout is told when a buyer of sku takes a checkout permit (CheckoutEnter), is
	// about to give it back (CheckoutLeave), or got none within checkout.wait (CheckoutFull).
	ObserveCheckout(sku, event string)
}

type nopObserver struct{}

func (nopObserver) ObserveSale(string, string, time.Duration, time.Duration) {}
func (nopObserver) ObserveStaleWrite(string)                                 {}
func (nopObserver) ObserveForeignUnlock(string)                              {}
func (nopObserver) ObserveRenewals(string, int64)                            {}
func (nopObserver) ObserveLeaseLost(string)                                  {}
func (nopObserver) ObserveCheckout(string, string)                           {}

// New builds a Service. pingers names every Redis the service depends on, for readiness.
func New(st *store.Store, locks *modes.Registry, set Settings, pingers map[string]Pinger, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: st, locks: locks, set: set, log: log,
		pingers: pingers, observer: nopObserver{}}
	if set.MaxInFlight > 0 {
		s.inflight = make(chan struct{}, set.MaxInFlight)
	}
	return s
}

// SetObserver installs a metrics observer.
func (s *Service) SetObserver(o Observer) { s.observer = o }

// Settings returns the service settings.
func (s *Service) Settings() Settings { return s.set }

// SaleRequest is one buyer's request. Zero values mean the configured defaults.
type SaleRequest struct {
	SKU  string
	Mode string
	// Lease, when above 0, is an explicit lease for this acquisition: the modes with a watchdog
	// then run without it (Redisson's lock(leaseTime)), so a business time longer than it loses
	// the lock.
	Lease time.Duration
	// LabParams names the parameters the request carried that only the lab serves, whatever
	// their value (the handler's parser fills it, so that workMs=0 is refused like workMs=5 where
	// the lab is off); the lab reads its own on the context (modes.WithFaults).
	LabParams []string
	// Operator: the caller proved to be the operator (X-Admin-Token), or no token is set.
	Operator bool
}

// requestSlack is what a sale may take beyond its lock wait and what its hook adds: Redis round
// trips, and the lease renewals of a long hold.
const requestSlack = 10 * time.Second

// SaleResult is what a buyer is told.
type SaleResult struct {
	Sold bool `json:"sold"`
	// Remaining is the stock left as this sale saw it (after its own unit when sold); nil, and
	// left out of the answer, when the sale failed before reading the stock (no lock within the
	// wait, Redis down): a 0 there would read as sold out.
	Remaining     *int64  `json:"remaining,omitempty"`
	OrderID       string  `json:"orderId,omitempty"`
	Instance      string  `json:"instance"`
	Lock          string  `json:"lock"`
	WaitMs        float64 `json:"waitMs"`
	Message       string  `json:"message"`
	Token         int64   `json:"token,omitempty"`
	StaleWrite    bool    `json:"staleWrite,omitempty"`
	ForeignUnlock bool    `json:"foreignUnlock,omitempty"`
	ReleaseError  string  `json:"releaseError,omitempty"`
	// Renewals counts the watchdog's renewals of this sale's lease (the lab shows them).
	Renewals int64 `json:"renewals,omitempty"`
	// Section is when the sale was inside its read-check-write, as far as this process can
	// tell (Settings.TrackOverlap only; zero otherwise): from the answer to its enter to the
	// sending of its leave, inside the span Redis counted it in (Inventory.Overlaps). The lab's
	// timeline draws it, so its overlaps and the audit's count the same thing.
	Section Section `json:"-"`
}

// Section is a sale's time inside the read-check-write (SaleResult.Section).
type Section struct{ Enter, Leave time.Time }

// saleLock is a sale's lock mode, resolved once per request into what the sale needs: the mode
// and its Locker, the lock key for the sale's SKU and the token counter its tokens come from.
type saleLock struct {
	modes.Resolved
	key     string
	counter string
}

// validate checks the request against the configuration and resolves its lock mode.
func (s *Service) validate(req *SaleRequest) (sl saleLock, err error) {
	if req.SKU, err = s.resolveSKU(req.SKU); err != nil {
		return saleLock{}, err
	}
	if req.Mode == "" {
		req.Mode = s.set.Mode
	}
	resolved, err := s.locks.Resolve(req.Mode)
	if err != nil {
		return saleLock{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	sl = saleLock{Resolved: resolved, key: store.LockKey(req.SKU, resolved.Name), counter: s.counter(resolved.Name)}
	mode := sl.Mode
	if err := s.checkPosture(*req, mode); err != nil {
		return sl, err
	}
	if req.Lease == 0 {
		return sl, nil
	}
	if !s.set.LabEnabled {
		return sl, fmt.Errorf("%w: fault %s: %w", ErrBadRequest, modes.FaultExplicitLease, ErrLabDisabled)
	}
	return sl, CheckFault(mode, modes.FaultExplicitLease, req.Lease, s.set.MaxLease)
}

// CheckFault refuses (ErrBadRequest) a fault's value that is negative or above limit (0: no limit),
// or a fault that mode cannot simulate: the service checks an explicit lease with it, the lab's
// sale hook the faults it injects.
func CheckFault(mode modes.Mode, name string, value, limit time.Duration) error {
	switch {
	case value < 0:
		return fmt.Errorf("%w: %s must not be negative", ErrBadRequest, name)
	case limit > 0 && value > limit:
		return fmt.Errorf("%w: %s=%d exceeds the configured maximum of %d ms",
			ErrBadRequest, name, value.Milliseconds(), limit.Milliseconds())
	case !mode.Supports(name):
		return fmt.Errorf("%w: fault %s does not apply to lock mode %s; it applies to: %s",
			ErrBadRequest, name, mode.Name, strings.Join(modesSupporting(name), ", "))
	}
	return nil
}

// modesSupporting lists the modes that can simulate fault, in row order.
func modesSupporting(fault string) []string {
	var names []string
	for _, m := range modes.Modes() {
		if m.Supports(fault) {
			names = append(names, m.Name)
		}
	}
	return names
}

// Sale sells one unit of stock. On sold out it returns the result and ErrSoldOut; on a rejected
// stale write, the result and ErrStaleWrite; when a restock came between its read and its write,
// the result and ErrRestocked, with nothing written.
func (s *Service) Sale(ctx context.Context, req SaleRequest) (SaleResult, error) {
	sl, err := s.validate(&req)
	if err != nil {
		return SaleResult{}, err
	}
	mode, locker, key := sl.Mode, sl.Locker, sl.key
	var steps SaleSteps = noSteps{}
	if s.hook != nil {
		if ctx, steps, err = s.hook.Begin(ctx, mode); err != nil {
			return SaleResult{}, err
		}
	}
	leave, err := s.enter()
	if err != nil {
		return SaleResult{Instance: s.set.Instance, Lock: mode.Name}, err
	}
	defer leave()
	// A per-request deadline, so a slow or vanished client cannot pin a goroutine (and a lock)
	// longer than the waits plus what its hook adds (the lab's business time and pauses).
	within := s.set.Wait + steps.Within() + requestSlack
	if s.checkoutOn() && !mode.Atomic {
		within += s.set.CheckoutWait
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	res := SaleResult{Instance: s.set.Instance, Lock: mode.Name}
	order := store.Order{ID: uuid.NewString(), Instance: s.set.Instance, Mode: mode.Name}
	if mode.Atomic {
		return s.atomicSale(ctx, req, res, order)
	}
	// Only checkout.limit buyers of the SKU wait for its lock at once; the others are told so.
	leaveCheckout, err := s.enterCheckout(ctx, req.SKU, mode.Name)
	if err != nil {
		return res, err
	}
	defer leaveCheckout()

	start := time.Now()
	opts := lock.Options{Wait: s.set.Wait, Owner: order.ID}
	if req.Lease > 0 {
		opts.Lease, opts.ExplicitLease = req.Lease, true
	}
	lease, err := locker.Acquire(ctx, key, opts)
	res.WaitMs = ms(time.Since(start))
	if err != nil {
		s.observer.ObserveSale(mode.Name, "lock-error", time.Since(start), 0)
		if err = steps.Failed(err); errors.Is(err, ErrCrashed) {
			return res, err
		}
		if errors.Is(err, lock.ErrNotObtained) {
			if dl := s.deadlockHint(ctx, key); dl != nil {
				return res, fmt.Errorf("%w: %w", ErrLockTimeout, dl)
			}
		}
		return res, s.lockError(err, mode.Name, key)
	}
	held := time.Now()
	res.Token = lease.Token()
	if err := steps.Locked(ctx, key); err != nil {
		// The holder "died" (the lab's crash): no renewal, no release; only the TTL frees the lock.
		s.log.Warn("injected crash after acquiring", "lock", mode.Name, "key", key)
		s.observer.ObserveSale(mode.Name, "crashed", time.Since(start), time.Since(held))
		return res, err
	}

	// Unless the hook acts between them, the commit and the release go out together (critical).
	var joined *joinedRelease
	if !steps.Separate() {
		joined = &joinedRelease{}
	}
	result, saleErr := s.critical(ctx, req, sl.counter, lease, steps, order, &res, joined)
	// The release must run even if the buyer went away: a lock left behind blocks everyone.
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin)
	defer cancel()
	// Lost closes at the release: whether the lease was lost is read before it.
	var lostHeld bool
	if joined != nil && joined.sent {
		lostHeld = joined.lost
	} else {
		lostHeld = isClosed(lease.Lost())
	}
	if joined != nil && joined.sent && !errors.Is(joined.err, lock.ErrUnavailable) {
		err = joined.err // sent with the commit (one Redis did not answer goes to s.release, again)
	} else {
		err = s.release(relCtx, lease)
	}
	if err != nil {
		switch {
		case errors.Is(err, modes.ErrForeignUnlock):
			res.ForeignUnlock = true
			s.observer.ObserveForeignUnlock(mode.Name)
			if cerr := s.store.CountForeignUnlock(relCtx, req.SKU); cerr != nil {
				s.log.Error("count foreign unlock", "err", cerr)
			}
		case errors.Is(err, lock.ErrNotHeld):
			// The lease ran out during the business time: another holder may have been inside.
		default:
			s.log.Error("release lock", "lock", mode.Name, "key", key, "err", err)
		}
		res.ReleaseError = err.Error()
		if errors.Is(err, lock.ErrUnavailable) {
			res.ReleaseError = "the release got no answer from Redis (logged); the lock ends with its lease"
		}
	}
	res.Renewals = lease.Renewals()
	s.observer.ObserveRenewals(mode.Name, res.Renewals)
	if lostHeld {
		s.observer.ObserveLeaseLost(mode.Name)
	}
	s.observer.ObserveSale(mode.Name, result, held.Sub(start), time.Since(held))
	attrs := []any{"lock", mode.Name, "result", result, "sold", res.Sold, "waitMs", res.WaitMs, "order", res.OrderID, "token", res.Token}
	if res.Remaining != nil { // unknown when the stock was never read, as in the answer
		attrs = append(attrs, "remaining", *res.Remaining)
	}
	s.log.Debug("sale", attrs...)
	return res, saleErr
}

// releaseWithin bounds a release, which runs even after the buyer has gone.
const releaseWithin = 5 * time.Second

// joinedRelease is a release sent in one round trip with the commit (Lease.ReleaseAfter).
type joinedRelease struct {
	sent bool
	err  error
	// lost: the lease was lost before the release (a release closes Lost).
	lost bool
	// left: the holder left the section (TrackOverlap) in the same pipeline, before the release,
	// sent at leaveSent.
	left      bool
	leaveSent time.Time
}

// critical is the read-check-write inside the lock. It returns a short result label. With joined,
// a commit goes out with the release behind it, in one pipeline, where the lease can do that
// (joined.sent then, and joined.err is the release's error).
func (s *Service) critical(ctx context.Context, req SaleRequest, counter string, lease modes.Lease, steps SaleSteps, order store.Order, res *SaleResult, joined *joinedRelease) (string, error) {
	if s.set.TrackOverlap {
		// Leave even when Enter failed: its reply may be what was lost, and leaving is idempotent.
		defer func() {
			if joined != nil && joined.left {
				if !res.Section.Enter.IsZero() {
					res.Section.Leave = joined.leaveSent
				}
				return
			}
			if !res.Section.Enter.IsZero() {
				res.Section.Leave = time.Now()
			}
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin)
			defer cancel()
			if err := s.store.LeaveSection(lctx, req.SKU, order.ID); err != nil {
				s.log.Error("leave section", "err", err)
			}
		}()
		within := time.Minute
		if deadline, ok := ctx.Deadline(); ok {
			within = time.Until(deadline)
		}
		if err := s.store.EnterSection(ctx, req.SKU, order.ID, within); err != nil {
			return "error", s.storeError(err)
		}
		res.Section.Enter = time.Now()
	}
	read, err := s.store.ReadStock(ctx, req.SKU, lease.Token(), counter)
	if err != nil {
		return "error", s.storeError(err)
	}
	if read.Stale {
		res.StaleWrite = true
		s.observer.ObserveStaleWrite(res.Lock)
		res.Message = fmt.Sprintf("read refused: fencing token %d is older than token %d already used (served by %s)",
			lease.Token(), read.Newest, s.set.Instance)
		return "stale", ErrStaleWrite
	}
	stock := read.Stock
	res.Remaining = &stock
	if stock <= 0 {
		res.Message = fmt.Sprintf("sold out: %s has no stock left (served by %s)", req.SKU, s.set.Instance)
		return "soldout", ErrSoldOut
	}
	if err := steps.Read(ctx); err != nil {
		return "error", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if lost := lease.Lost(); lost != nil {
		select {
		case <-lost:
			return "lost", fmt.Errorf("%w: %s", ErrLockLost, lease.Key())
		default:
		}
	}
	steps.Checked(ctx)
	order.Token, order.Counter, order.Epoch = lease.Token(), counter, read.Epoch
	cr, err := s.commit(ctx, req.SKU, stock-1, order, lease, joined)
	if err != nil {
		return "error", s.storeError(err)
	}
	if cr.Restocked {
		res.Remaining = nil // what was read is no longer the stock
		res.Message = fmt.Sprintf("nothing sold: %s was restocked after this sale read its stock; try again (served by %s)",
			req.SKU, s.set.Instance)
		return "restocked", ErrRestocked
	}
	if cr.Stale {
		res.StaleWrite = true
		s.observer.ObserveStaleWrite(res.Lock)
		res.Message = fmt.Sprintf("write rejected: fencing token %d is older than token %d already written (served by %s)",
			order.Token, cr.NewestToken, s.set.Instance)
		return "stale", ErrStaleWrite
	}
	left := stock - 1
	res.Sold, res.Remaining, res.OrderID = true, &left, order.ID
	res.Message = fmt.Sprintf("sold one, %d left (served by %s)", stock-1, s.set.Instance)
	return "sold", nil
}

// counter names the token counter of mode (store.Counters): each has a fence of its own, since
// tokens of two counters are not comparable. Modes without tokens carry token 0, never fenced.
func (s *Service) counter(mode string) string {
	switch {
	case mode == "redlock-fenced":
		return store.CounterRedlock
	case mode == "fenced" && s.set.RFencedLayout:
		return store.CounterRFenced
	}
	return store.CounterFenced
}

// commit writes the sale; with joined, the release follows it in the same pipeline (behind the
// leave of the section, when overlaps are counted), so the next holder gets the lock one round
// trip sooner where the lease can join it.
func (s *Service) commit(ctx context.Context, sku string, stock int64, order store.Order, lease modes.Lease, joined *joinedRelease) (store.CommitResult, error) {
	if joined == nil || ctx.Err() != nil {
		return s.store.Commit(ctx, sku, stock, order)
	}
	p := s.store.Pipeline()
	read := s.store.CommitIn(ctx, p, sku, stock, order)
	var leave func() error
	if s.set.TrackOverlap {
		// Out of the section before the release, as the deferred leave would be.
		leave = s.store.LeaveSectionIn(ctx, p, sku, order.ID)
	}
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin)
	defer cancel()
	joined.leaveSent = time.Now()
	joined.lost = isClosed(lease.Lost())
	joined.sent, joined.err = true, lease.ReleaseAfter(relCtx, p)
	joined.left = leave != nil && leave() == nil
	return read()
}

func (s *Service) atomicSale(ctx context.Context, req SaleRequest, res SaleResult, order store.Order) (SaleResult, error) {
	start := time.Now()
	left, sold, err := s.store.AtomicSale(ctx, req.SKU, order)
	if err != nil {
		s.observer.ObserveSale(res.Lock, "error", 0, time.Since(start))
		return res, s.storeError(err)
	}
	res.Remaining = &left
	if !sold {
		s.observer.ObserveSale(res.Lock, "soldout", 0, time.Since(start))
		res.Message = fmt.Sprintf("sold out: %s has no stock left (served by %s)", req.SKU, s.set.Instance)
		return res, ErrSoldOut
	}
	s.observer.ObserveSale(res.Lock, "sold", 0, time.Since(start))
	res.Sold, res.OrderID = true, order.ID
	res.Message = fmt.Sprintf("sold one, %d left (served by %s)", left, s.set.Instance)
	s.log.Debug("sale", "lock", res.Lock, "result", "sold", "remaining", left, "order", order.ID)
	return res, nil
}

func (s *Service) lockError(err error, mode, key string) error {
	switch {
	case errors.Is(err, lock.ErrUnavailable):
		// Before ErrNotObtained: a mode that gives up at once when a server it needs does not
		// answer (multilock) has not waited, and the fault is the server's.
		s.log.Error("acquire lock", "lock", mode, "key", key, "err", err)
		return hide(fmt.Sprintf("%s: a Redis server that lock mode %s needs did not answer", ErrUnavailable, mode), ErrUnavailable, err)
	case errors.Is(err, lock.ErrNotObtained):
		s.log.Debug("lock not obtained", "lock", mode, "key", key, "err", err)
		return hide(fmt.Sprintf("%s: %s (mode %s, waited %s)", ErrLockTimeout, key, mode, s.set.Wait), ErrLockTimeout, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		s.log.Error("acquire lock", "lock", mode, "key", key, "err", err)
		return hide(fmt.Sprintf("%s: the lock was not obtained before the request ended", ErrUnavailable), ErrUnavailable, err)
	default:
		s.log.Error("acquire lock", "lock", mode, "key", key, "err", err)
		return fmt.Errorf("acquire %s: %w", key, err)
	}
}

// hidden is an error whose text is for the public (no server address, no Redis reply): the cause
// it wraps, for errors.Is and As, is logged where it is made.
type hidden struct {
	msg  string
	errs []error
}

func (h *hidden) Error() string   { return h.msg }
func (h *hidden) Unwrap() []error { return h.errs }

// hide is an error reading msg that wraps kind and cause; the caller logs cause.
func hide(msg string, kind, cause error) error { return &hidden{msg: msg, errs: []error{kind, cause}} }

func (s *Service) storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNoStock):
		s.log.Warn("no stock key: the operator must restock", "err", err)
		return fmt.Errorf("%w: %w; sales resume once an operator restocks it: POST /inventory/restock?stock=N "+
			"with the X-Admin-Token header (the stock is not re-created on its own)", ErrNoStock, err)
	case errors.Is(err, store.ErrUnavailable):
		s.log.Error("data redis", "err", err)
		return hide(fmt.Sprintf("%s: the data Redis did not answer or would not serve (the log says why)", ErrUnavailable), ErrUnavailable, err)
	case errors.Is(err, store.ErrCorrupt):
		s.log.Error("corrupt stock", "err", err)
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	default:
		s.log.Error("data redis", "err", err)
		return err
	}
}

// SKUs lists every SKU on sale, the default first.
func (s *Service) SKUs() []string {
	if len(s.set.SKUs) == 0 {
		return []string{s.set.SKU}
	}
	return s.set.SKUs
}

// resolveSKU maps "" to the default SKU and refuses SKUs that are not configured (ErrNotFound).
func (s *Service) resolveSKU(sku string) (string, error) {
	if sku == "" {
		return s.set.SKU, nil
	}
	if slices.Contains(s.SKUs(), sku) {
		return sku, nil
	}
	return "", fmt.Errorf("%w: unknown sku %q; configured: %s", ErrNotFound, sku, strings.Join(s.SKUs(), ", "))
}

// InventoryAll returns the audit view of every SKU.
func (s *Service) InventoryAll(ctx context.Context) ([]store.Inventory, error) {
	var out []store.Inventory
	for _, sku := range s.SKUs() {
		inv, err := s.Inventory(ctx, sku)
		if err != nil {
			return nil, err
		}
		out = append(out, inv)
	}
	return out, nil
}

// Inventory returns the audit view of sku ("" = the default SKU).
func (s *Service) Inventory(ctx context.Context, sku string) (store.Inventory, error) {
	sku, err := s.resolveSKU(sku)
	if err != nil {
		return store.Inventory{}, err
	}
	inv, err := s.store.Snapshot(ctx, sku)
	if err != nil {
		return inv, s.storeError(err)
	}
	return inv, nil
}

// Reset puts stock into sku, clears its orders, counters and lock keys (on the data Redis and on
// every master), and returns the new state. stock < 0 means the configured default.
func (s *Service) Reset(ctx context.Context, sku string, stock int64) (store.Inventory, error) {
	sku, err := s.resolveSKU(sku)
	if err != nil {
		return store.Inventory{}, err
	}
	if stock < 0 {
		stock = s.set.Stock
	}
	if stock > s.set.MaxStock {
		return store.Inventory{}, fmt.Errorf("%w: stock %d is out of range 0..%d", ErrBadRequest, stock, s.set.MaxStock)
	}
	var lockKeys []string
	for _, keys := range s.locks.Keys(lockKeyOf(sku)) {
		lockKeys = append(lockKeys, keys...)
	}
	if err := s.store.Reset(ctx, sku, stock, lockKeys...); err != nil {
		return store.Inventory{}, s.storeError(err)
	}
	if err := s.locks.ClearMasters(ctx, store.KeysFor(sku).LockPrefix, lockKeys); err != nil {
		s.log.Error("clear lock keys on the masters", "sku", sku, "err", err)
		return store.Inventory{}, hide(fmt.Sprintf("%s: clear lock keys on the masters: a master did not answer", ErrUnavailable), ErrUnavailable, err)
	}
	s.log.Info("inventory reset", "sku", sku, "stock", stock)
	return s.Inventory(ctx, sku)
}

// lockKeyOf names the lock key of each mode for sku.
func lockKeyOf(sku string) func(mode string) string {
	return func(mode string) string { return store.LockKey(sku, mode) }
}

// Ready reports whether this instance can sell in its configured mode (lock.mode): the data
// Redis answers and every SKU's stock key exists, and the masters the mode needs answer (all of
// them for multilock, a majority for redlock; the single-instance modes need none). The status
// names every server, needed or not, by its role ("data", "master1"..) and says "ok" or "down":
// why one is down (its address, the error) is logged, never answered.
func (s *Service) Ready(ctx context.Context) (map[string]string, error) {
	var (
		mu                 sync.Mutex
		wg                 sync.WaitGroup
		status             = map[string]string{}
		down               []string
		masters, mastersUp int
	)
	needAll, needQuorum := false, false
	switch s.set.Mode {
	case "multilock":
		needAll = true
	case "redlock", "redlock-fenced":
		needQuorum = true
	}
	// In parallel: a paused Redis must cost one ping timeout, not one per server.
	for name, p := range s.pingers {
		master := strings.HasPrefix(name, "master")
		if master {
			masters++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.Ping(ctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				status[name] = "ok"
				if n, ok := p.(Noter); ok && n.Note() != "" {
					status[name] = "ok (" + n.Note() + ")"
				}
				if master {
					mastersUp++
				}
			case master && !needAll && !needQuorum:
				s.log.Warn("readiness: no answer", "redis", name, "err", err)
				status[name] = fmt.Sprintf("down (not needed by lock mode %s)", s.set.Mode)
			default:
				// The cause (an address, "connection refused", a WRONGPASS) goes to the log only.
				s.log.Error("readiness: no answer", "redis", name, "err", err)
				status[name] = "down"
				if !master || needAll {
					down = append(down, name)
				}
			}
		}()
	}
	wg.Wait()
	if needQuorum && masters > 0 && mastersUp < masters/2+1 {
		down = append(down, fmt.Sprintf("masters (%d of %d answer, redlock needs %d)", mastersUp, masters, masters/2+1))
	}
	if len(down) > 0 {
		sort.Strings(down)
		return status, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(down, ", "))
	}
	if s.store != nil {
		missing, err := s.store.MissingStock(ctx, s.SKUs())
		if err != nil {
			return status, s.storeError(err)
		}
		for _, sku := range missing {
			status["stock "+sku] = "missing: restock it (POST /inventory/restock?stock=N with X-Admin-Token)"
		}
		if len(missing) > 0 {
			return status, fmt.Errorf("%w: stock key of %s does not exist", ErrNoStock, strings.Join(missing, ", "))
		}
	}
	return status, nil
}

// isClosed reports whether ch is closed (a nil channel never is).
func isClosed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d.Microseconds())) / 1000
}
