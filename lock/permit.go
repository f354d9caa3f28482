package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// ExpirableSemaphore is Redisson's RPermitExpirableSemaphore, wire-compatible with Java
// Redisson's getPermitExpirableSemaphore(name): the count key of Semaphore, plus a sorted set
// "{<name>}:timeout" of permit id -> expiry (unix ms). A permit whose expiry has passed comes
// back at the next command on the semaphore, from any client. Each permit is a lease on the
// library's core (core.Life, as a Lease's): renewed by a watchdog every lease/3 while held when
// no lease is given, so a holder that dies gives its permit back one lease later; or kept for
// the lease given, unless refreshed. Its waiters wait in the queue of every kind (handoff.go) and
// wake on a release's message, or when the earliest permit held expires.
//
// Unlike Redisson, a permit taken without a lease is renewed, not kept for ever: Redisson's
// would never come back when its holder dies.
type ExpirableSemaphore struct{ *semBase }

// NewExpirableSemaphore returns an ExpirableSemaphore on one Redis. It honours WithLease (the
// watchdog timeout of permits taken without a lease; default 30 s), WithLogger and
// WithShardedPubSub, and refuses the other options.
func NewExpirableSemaphore(rdb redis.UniversalClient, opts ...Option) (*ExpirableSemaphore, error) {
	b, err := newSemBase("expirableSemaphore", rdb, []string{"WithLease", "WithLogger", "WithShardedPubSub"}, opts)
	if err != nil {
		return nil, err
	}
	return &ExpirableSemaphore{b}, nil
}

// TrySetPermits sets the semaphore's number of permits to n when it has none set yet (true); false
// when it was set already. n must be above 0.
func (s *ExpirableSemaphore) TrySetPermits(ctx context.Context, name string, n int) (bool, error) {
	return s.trySet(ctx, name, n)
}

// AvailablePermits gives back the permits whose lease has ended, then counts those available.
func (s *ExpirableSemaphore) AvailablePermits(ctx context.Context, name string) (int, error) {
	if err := s.check("count", name, 1, 0); err != nil {
		return 0, err
	}
	n, err := s.sub.mode.run(ctx, s.rdb, script.PermitAvailableCall(name, time.Now().UnixMilli())).Int()
	if err != nil {
		return 0, redisErr("count permits of "+name, err)
	}
	return n, nil
}

// Acquire takes one permit of name, waiting up to wait (0: one attempt), as Semaphore.Acquire
// does. With lease 0 the permit is renewed by a watchdog (the semaphore's lease, every lease/3)
// until Release; with a lease it lasts that long unless refreshed.
func (s *ExpirableSemaphore) Acquire(ctx context.Context, name string, wait, lease time.Duration) (*Permit, error) {
	if err := s.check("acquire", name, 1, wait); err != nil {
		return nil, err
	}
	if lease < 0 {
		return nil, fmt.Errorf("lock: %s: acquire %s: lease %s: want 0 (a watchdog) or above", s.kind, name, lease)
	}
	watch := lease == 0
	if watch {
		lease = s.lease
	}
	var id string // the bytes
	var sent time.Time
	err := s.wait(ctx, name, wait, func(ctx context.Context) (bool, time.Duration, error) {
		// A new id for every attempt: one that got no answer may still take its permit.
		id, sent = newPermitID(), time.Now()
		held, next, err := s.try(ctx, name, id, sent, lease)
		if retryable(err) { // that permit is given back at once (giveBackOrphan)
			p := &Permit{s: s, name: name, id: id}
			go giveBackOrphan(context.WithoutCancel(ctx), time.Now().Add(lease), p.release)
		}
		return held, next, err
	})
	if err != nil {
		return nil, err
	}
	return s.held(ctx, name, id, sent, lease, watch), nil
}

// TryAcquire takes one permit of name when one is available now; ErrNotObtained when none is.
func (s *ExpirableSemaphore) TryAcquire(ctx context.Context, name string, lease time.Duration) (*Permit, error) {
	return s.Acquire(ctx, name, 0, lease)
}

// try runs the acquire script once: held, or how long until the earliest permit held expires
// (< 0: none will).
func (s *ExpirableSemaphore) try(ctx context.Context, name, id string, now time.Time, lease time.Duration) (bool, time.Duration, error) {
	t, err := attempt(ctx, s.rdb, s.sub.mode, core.Permits, core.Ask{Key: name, Field: id, Lease: lease, Now: now})
	return t.Held, t.Wait, err
}

// held builds the permit won by an attempt sent at sent, and starts its life.
func (s *ExpirableSemaphore) held(ctx context.Context, name, id string, sent time.Time, lease time.Duration, watch bool) *Permit {
	p := &Permit{s: s, name: name, id: id, lease: lease}
	p.life = &p.own
	p.own.start(ctx, lease, lease, sent.Add(lease), p, watch, watch, watch)
	return p
}

// keep is a round of the permit's watchdog (keeper).
func (p *Permit) keep(ctx context.Context) (renewOutcome, error) { return outcome(p.renew(ctx)) }

// lost logs why the watchdog lost the permit (keeper).
func (p *Permit) lost(why error) {
	p.s.log.Warn("semaphore permit lost", "name", p.name, "permit", p.ID(), "err", why)
}

// newPermitID is a permit id as Redisson makes one: 16 random bytes (crypto/rand's Read never
// fails). Its name is their lower-case hex; the sorted set holds the bytes.
func newPermitID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return string(b)
}

// Permit is one permit of an ExpirableSemaphore, held until Release, until its lease ends, or
// until its watchdog is refused.
type Permit struct {
	s     *ExpirableSemaphore
	name  string
	id    string // the 16 bytes
	lease time.Duration
	life  *life // &own
	own   life
	gate  releaseGate
}

// ID is the permit's id, as Redisson names it: 32 lower-case hex digits. A Java client releases
// it with release(id).
func (p *Permit) ID() string { return hex.EncodeToString([]byte(p.id)) }

// Name is the semaphore's name.
func (p *Permit) Name() string { return p.name }

// Lost is closed when the permit no longer holds: its renewal was refused, its lease ran out by
// this process's clock (less the drift margin, as a Lease's), or it was released.
func (p *Permit) Lost() <-chan struct{} { return p.life.Lost() }

// Renewals counts the watchdog's renewals (0 for a permit with a lease of its own).
func (p *Permit) Renewals() int64 { return p.life.Renewals() }

// Refresh sets the permit's expiry a lease from now (Redisson's updateLeaseTime): ErrNotHeld when
// it is held no more.
func (p *Permit) Refresh(ctx context.Context) error {
	if p.gate.released() {
		return fmt.Errorf("%w: permit %s of %s: released", ErrNotHeld, p.ID(), p.name)
	}
	sent := time.Now()
	if err := p.renew(ctx); err != nil {
		return err
	}
	p.life.refreshed(sent)
	return nil
}

// Release gives the permit back and wakes a waiter; at once its renewal stops and Lost closes.
// ErrNotHeld when it was released already or its lease had ended (it came back then). A release
// that could not reach Redis, or whose context had ended, returns that error and goes on in the
// background by the give-back policy of every lease (resend), until Redis answers or the lease
// would have ended anyway; calling Release again meanwhile is safe.
func (p *Permit) Release(ctx context.Context) error {
	until := p.life.until()
	err := p.gate.release(ctx, nil, p.name, p.life.Stop, func() error { return p.release(ctx) })
	if retryable(err) {
		go func() {
			_ = resend(context.WithoutCancel(ctx), until, func(ctx context.Context) error {
				return p.gate.release(ctx, nil, p.name, nil, func() error { return p.release(ctx) })
			})
		}()
	}
	return err
}

// renew runs updateLeaseTime once.
func (p *Permit) renew(ctx context.Context) error {
	return renewHold(ctx, p.s.rdb, p.s.sub.mode, core.Permits, p.ask(), p.gone)
}

// release runs the release script once.
func (p *Permit) release(ctx context.Context) error {
	return releaseHold(ctx, nil, p.s.rdb, p.s.sub.mode, core.Permits, p.ask(), p.gone)
}

// ask is the permit as its commands are built from it.
func (p *Permit) ask() core.Ask { return core.Ask{Key: p.name, Field: p.id, Lease: p.lease} }

// gone is ErrNotHeld for a permit no longer held.
func (p *Permit) gone() error {
	return fmt.Errorf("%w: permit %s of %s: its lease ended, or it was released", ErrNotHeld, p.ID(), p.name)
}
