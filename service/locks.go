package service

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seckill/internal/modes"
	"seckill/store"

	"github.com/seckill-lab/seckill/lock"
)

// LocksView is the read-only answer of GET /locks: every lock key of one SKU on the data Redis
// and on each master, and the newest fencing token accepted.
type LocksView struct {
	SKU      string `json:"sku" example:"inventory001"`
	Instance string `json:"instance"`
	// InstanceID is the client id this instance writes into Redisson-layout hash fields.
	InstanceID string `json:"instanceId"`
	// Prefix is what every lock key of the SKU starts with.
	Prefix string `json:"prefix" example:"{inventory001}:lock:"`
	// FenceToken is the newest fencing token of mode fenced whose read or write was accepted (0:
	// none yet).
	FenceToken int64 `json:"fenceToken"`
	// FenceTokens is the newest accepted token of each fencing mode: fenced and redlock-fenced
	// draw from counters of their own, each with its own fence.
	FenceTokens map[string]int64 `json:"fenceTokens"`
	// FenceError says why a token could not be read.
	FenceError string              `json:"fenceError,omitempty"`
	Servers    []modes.ServerLocks `json:"servers"`
	// Checkout is the SKU's checkout limit and the permits free now (checkout.limit); absent
	// when the limit is off.
	Checkout *CheckoutView `json:"checkout,omitempty"`
}

// LockKeys reads the lock keys of sku ("" = the default SKU) everywhere, without changing them.
// A server that does not answer is reported in its entry; the view itself does not fail.
func (s *Service) LockKeys(ctx context.Context, sku string) (LocksView, error) {
	sku, err := s.resolveSKU(sku)
	if err != nil {
		return LocksView{}, err
	}
	k := store.KeysFor(sku)
	v := LocksView{SKU: sku, Instance: s.set.Instance, InstanceID: s.locks.InstanceID(), Prefix: k.LockPrefix,
		Servers: s.locks.Inspect(ctx, k.LockPrefix, lockKeyOf(sku))}
	v.FenceTokens = map[string]int64{}
	for _, mode := range []string{"fenced", "redlock-fenced"} {
		n, err := s.store.FenceToken(ctx, sku, s.counter(mode))
		if err != nil {
			s.log.Error("read fence", "sku", sku, "mode", mode, "err", err)
			v.FenceError = fmt.Sprintf("%s: the fence could not be read", mode)
			continue
		}
		v.FenceTokens[mode] = n
	}
	v.FenceToken = v.FenceTokens["fenced"]
	v.Checkout = s.checkoutView(ctx, sku)
	return v, nil
}

// MultiLockHold is the answer of GET /getMultiLock: what the multilock looked like on each
// master while it was held.
type MultiLockHold struct {
	Key      string `json:"key" example:"{inventory001}:lock:multilock"`
	Instance string `json:"instance"`
	// Field is the hash field held on every master ("<instance-id>:<owner>").
	Field        string  `json:"field"`
	HoldSeconds  int64   `json:"holdSeconds" example:"30"`
	LeaseMs      int64   `json:"leaseMs" example:"30000"`
	RenewEveryMs int64   `json:"renewEveryMs" example:"10000"`
	WaitMs       float64 `json:"waitMs"`
	HeldMs       float64 `json:"heldMs"`
	// Lost: a master's renewal failed while held; the hold was cut short.
	Lost bool `json:"lost"`
	// Released: every master's lock was given back at the end.
	Released     bool         `json:"released"`
	ReleaseError string       `json:"releaseError,omitempty"`
	Masters      []MasterHold `json:"masters"`
	Message      string       `json:"message"`
}

// MasterHold is one master's side of a multilock hold.
type MasterHold struct {
	Master int    `json:"master" example:"1"`
	Addr   string `json:"addr" example:"127.0.0.1:6381"`
	// TTLAtAcquireMs is the PTTL read right after acquiring.
	TTLAtAcquireMs int64 `json:"ttlAtAcquireMs" example:"29998"`
	// Samples are the PTTLs read while holding: they fall, then jump back up at each renewal.
	Samples []TTLSample `json:"samples"`
	// TTLJumps counts the samples whose PTTL was higher than the one before: renewals seen.
	TTLJumps int `json:"ttlJumps" example:"2"`
	// Renewals counts the watchdog's successful renewals on this master.
	Renewals int64 `json:"renewals" example:"2"`
}

// TTLSample is one PTTL reading.
type TTLSample struct {
	AtMs  int64  `json:"atMs" example:"1000"`
	TTLMs int64  `json:"ttlMs" example:"28990"`
	Error string `json:"error,omitempty"`
}

// maxSamples bounds a hold's samples per master.
const maxSamples = 600

// DefaultHold is how long GET /getMultiLock holds the lock when not told (30 s, as in the
// multilock demo of docs/lab.md, step 8).
const DefaultHold = 30 * time.Second

// HoldMultiLock takes the multilock of the default SKU (GET /getMultiLock, the demo of
// docs/lab.md, step 8), holds it for hold (< 0: the default, bounded by lab.maxWork) while sampling its
// PTTL on every master, then releases it. It needs no lab: it only holds a lock, for a bounded
// time.
func (s *Service) HoldMultiLock(ctx context.Context, hold time.Duration) (MultiLockHold, error) {
	if hold < 0 {
		hold = DefaultHold
		if s.set.MaxWork > 0 {
			hold = min(hold, s.set.MaxWork)
		}
	}
	if s.set.MaxWork > 0 && hold > s.set.MaxWork {
		return MultiLockHold{}, fmt.Errorf("%w: holdSeconds=%d exceeds lab.maxWork (%s)",
			ErrBadRequest, int64(hold/time.Second), s.set.MaxWork)
	}
	locker, _, err := s.locks.Locker("multilock")
	if err != nil || locker == nil {
		return MultiLockHold{}, fmt.Errorf("%w: multilock mode is not available: %w", ErrUnavailable, err)
	}
	ttl := s.locks.Lease()
	key := store.LockKey(s.set.SKU, "multilock")
	out := MultiLockHold{Key: key, Instance: s.set.Instance, HoldSeconds: int64(hold / time.Second),
		LeaseMs: ttl.Milliseconds(), RenewEveryMs: (ttl / 3).Milliseconds()}

	start := time.Now()
	lease, err := locker.Acquire(ctx, key, lock.Options{Wait: s.set.Wait, Owner: "getMultiLock-" + uuid.NewString()})
	out.WaitMs = ms(time.Since(start))
	if err != nil {
		return out, s.lockError(err, "multilock", key)
	}
	held := time.Now()
	var parts []*lock.Lease
	if ml, ok := lease.(modes.MultiLease); ok {
		parts = ml.Parts()
	}
	if len(parts) > 0 {
		out.Field = parts[0].Field()
	}
	addrs := s.locks.MasterAddrs()
	out.Masters = make([]MasterHold, len(addrs))
	for i, p := range s.locks.MasterPTTLs(ctx, key) {
		out.Masters[i] = MasterHold{Master: i + 1, Addr: addrs[i], TTLAtAcquireMs: p.Ms, Samples: []TTLSample{}}
	}

	// Sample often enough to see the TTL fall and jump back at every lease/3 renewal.
	every := min(max(ttl/6, 50*time.Millisecond), time.Second)
	every = max(every, hold/maxSamples)
	tick := time.NewTicker(every)
	defer tick.Stop()
	end := time.NewTimer(hold)
	defer end.Stop()
hold:
	for {
		select {
		case <-tick.C:
			at := time.Since(held).Milliseconds()
			for i, p := range s.locks.MasterPTTLs(ctx, key) {
				smp := TTLSample{AtMs: at, TTLMs: p.Ms}
				if p.Err != nil {
					smp.Error = p.Err.Error()
				}
				mh := &out.Masters[i]
				if n := len(mh.Samples); n > 0 && smp.Error == "" && smp.TTLMs > mh.Samples[n-1].TTLMs {
					mh.TTLJumps++
				}
				mh.Samples = append(mh.Samples, smp)
			}
		case <-end.C:
			break hold
		case <-lease.Lost():
			out.Lost = true
			break hold
		case <-ctx.Done():
			break hold
		}
	}
	out.HeldMs = ms(time.Since(held))
	for i := range out.Masters {
		if i < len(parts) {
			out.Masters[i].Renewals = parts[i].Renewals()
		}
	}
	// The release must run even if the caller went away.
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWithin)
	defer cancel()
	if err := lease.Release(relCtx); err != nil {
		out.ReleaseError = err.Error()
		s.log.Warn("getMultiLock release", "key", key, "err", err)
	} else {
		out.Released = true
	}
	out.Message = fmt.Sprintf("multilock %s held %.1fs on %d masters by %s", key, out.HeldMs/1000, len(addrs), s.set.Instance)
	if out.Lost {
		out.Message += "; lost: a master's renewal failed"
	}
	return out, nil
}
