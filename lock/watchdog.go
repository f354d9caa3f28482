package lock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// life drives one lease's core.Life (lock/core), which makes every decision of the lease's life:
// when to renew, when the lease is lost, when it is over. life holds one mutex and one timer,
// sends a renewal when the core asks (a watchdog: every lease/3 while held, again after a
// failure while the lease lasts), and closes lost when the core says the lease is lost or when
// it is given back. The core's deadline is a timer of its own: a renewal blocked on a server that
// does not answer cannot hold Lost back. Renewals run under base: the acquiring context's values
// without its cancellation, so tracing and client hooks see a renewal as part of the acquisition
// that started it.
type life struct {
	acquired context.Context // the acquiring context, for the values of the renewals
	lease    time.Duration
	// k is the lease's side: its renewal round (when renews) and what it does once lost (when
	// tells).
	k             keeper
	renews, tells bool
	// endOf is how long a renewal sent at sent keeps the lock by our clock: nil for core.SafeEnd of
	// the lease; Redlock's validity.
	endOf func(sent time.Time) time.Time

	mu   sync.Mutex
	core core.Life
	// base and cancel are the renewals' context, made at the first renewal (a lease given back
	// before one needs none).
	base   context.Context
	cancel context.CancelFunc
	// timer wakes the core at wake: made at the start for a life that renews or tells its keeper,
	// else when Lost is first asked for (a holder that never asks costs no timer).
	timer  *time.Timer
	wake   time.Time
	lost   chan struct{} // made when first asked for (nil until then)
	closed bool
}

// keeper is a lease's side of its life: one round of its watchdog, and being told, once, why the
// lease was lost.
type keeper interface {
	keep(ctx context.Context) (renewOutcome, error)
	lost(why error)
}

// renewOutcome is what one round of a watchdog did.
type renewOutcome int

const (
	// renewed: the lock is ours for another lease.
	renewed renewOutcome = iota
	// renewStopped: the holder stopped the renewal while the round was under way (a release or a
	// crash): not a loss, so the watchdog ends quietly.
	renewStopped
	// renewLost: the lock is no longer ours (or could not be renewed in time): Lost closes.
	renewLost
	// renewFailed: the round failed on a transient error (no answer, a timeout): the lock may still
	// be ours, and the watchdog tries again while it surely is.
	renewFailed
)

// outcome is the watchdog outcome of one renewal's error: ErrNotHeld is a loss, any other error
// a transient failure.
func outcome(err error) (renewOutcome, error) {
	switch {
	case err == nil:
		return renewed, nil
	case errors.Is(err, ErrNotHeld):
		return renewLost, err
	default:
		return renewFailed, err
	}
}

// start starts a life of the caller's (a field of a lease) not started before: the lease's lock
// lives ttl until until by our clock (its TTL counted from the send of the command that set it):
// the lease, or less for a lock handed over short. k is the lease's side: with renews, a watchdog
// renewing every lease/3 when watch, else the push of a lock handed over short to its lease a
// third of the way into ttl; with tells, k is told why the lease was lost. The renewals carry
// ctx's values.
func (l *life) start(ctx context.Context, lease, ttl time.Duration, until time.Time, k keeper, renews, watch, tells bool) {
	l.acquired, l.lease, l.k, l.renews, l.tells = ctx, lease, k, renews, tells
	l.mu.Lock()
	ttl = min(ttl, lease)
	end := core.SafeEnd(until.Add(-ttl), ttl)
	if !renews {
		ttl = lease // nothing can push it: the core must not ask for a push
	}
	r := l.core.Start(time.Now(), end, ttl, lease, watch && renews)
	if renews || tells {
		l.timer = time.AfterFunc(time.Hour, l.tick)
	}
	l.mu.Unlock()
	l.step(func(*core.Life) core.Ready { return r }, true)
}

// startUnwatched starts the life of a lease nothing watches (NewLua, an explicit lease): its lock
// lives ttl until until (its tenure; zero: a lease from the acquisition's last attempt). Only a
// lock handed over short is pushed out to its lease, by k; nobody is told but Lost. One
// with nothing to push makes its timer only when Lost is first asked for.
func (l *life) startUnwatched(ctx context.Context, lease, ttl time.Duration, until time.Time, k keeper) {
	if until.IsZero() {
		ttl, until = lease, attemptSent(ctx, time.Now()).Add(lease)
	}
	l.start(ctx, lease, ttl, until, k, ttl < lease, false, false)
}

// step gives the core an event (under the mutex) and does what it answers: arms the timer, sends
// a renewal and tells the keeper of a loss (in this goroutine when inline, the timer's or a
// renewal's; else in one of their own), closes lost.
func (l *life) step(event func(*core.Life) core.Ready, inline bool) {
	l.mu.Lock()
	r := event(&l.core)
	switch {
	case r.Lost:
		l.stopLocked()
	case !r.Wake.IsZero():
		l.wake = r.Wake
		if l.timer != nil {
			l.timer.Reset(time.Until(r.Wake))
		}
	}
	l.mu.Unlock()
	switch {
	case r.Lost && l.tells && inline:
		l.k.lost(r.Why)
	case r.Lost && l.tells:
		// Found by a caller's look (Lost), which may hold a lock the keeper takes.
		go l.k.lost(r.Why)
	case r.Renew && inline:
		l.round()
	case r.Renew:
		go l.round()
	}
}

func (l *life) tick() { l.step(func(c *core.Life) core.Ready { return c.Tick(time.Now()) }, true) }

// round sends one renewal and tells the core how it went.
func (l *life) round() {
	l.mu.Lock()
	if l.core.Over() {
		l.mu.Unlock()
		return // given back since the core asked for it
	}
	if l.base == nil {
		l.base, l.cancel = context.WithCancel(context.WithoutCancel(l.acquired))
	}
	base := l.base
	l.mu.Unlock()
	sent := time.Now()
	ctx, cancel := context.WithTimeout(base, max(l.lease/3, time.Millisecond))
	o, err := l.k.keep(ctx)
	cancel()
	l.step(func(c *core.Life) core.Ready {
		now := time.Now()
		switch o {
		case renewed:
			return c.Renewed(now, l.endAt(sent))
		case renewLost:
			if err == nil {
				err = errLost
			}
			return c.Refused(err)
		default:
			return c.Failed(now)
		}
	}, true)
}

// endAt is until when a renewal sent at sent keeps the lock by our clock.
func (l *life) endAt(sent time.Time) time.Time {
	if l.endOf != nil {
		return l.endOf(sent)
	}
	return core.SafeEnd(sent, l.lease)
}

// close closes lost, once (l.mu held).
func (l *life) close() {
	switch {
	case l.closed:
	case l.lost == nil:
		l.closed, l.lost = true, closedChan
	default:
		l.closed = true
		close(l.lost)
	}
}

// Lost is closed when the lease was lost (renewal refused, or its life ran out) or given back;
// a call after the lease's end finds it closed even when the timer fires late.
func (l *life) Lost() <-chan struct{} {
	l.step(func(c *core.Life) core.Ready { return c.Check(time.Now()) }, false)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = make(chan struct{})
	}
	if l.timer == nil && !l.closed {
		// Nothing needed the timer until a holder asked for Lost: it closes at the life's end.
		l.timer = time.AfterFunc(time.Until(l.wake), l.tick)
	}
	return l.lost
}

// Renewals counts the watchdog's answered renewals (0 for a nil life).
func (l *life) Renewals() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Renewals()
}

// Stop ends the life because the lease was given back: renewal stops (a renewal under way is
// cancelled; one that still lands only extends what is already ours) and Lost closes. A nil life
// has nothing to stop.
func (l *life) Stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.core.End()
	l.stopLocked()
	l.mu.Unlock()
}

// stopLocked stops the timer and a renewal under way, and closes lost (l.mu held).
func (l *life) stopLocked() {
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.cancel != nil {
		l.cancel()
	}
	l.close()
}

// refreshed tells the life that a renewal of the caller's own, sent at sent, was answered.
func (l *life) refreshed(sent time.Time) {
	l.step(func(c *core.Life) core.Ready { return c.Refreshed(time.Now(), l.endAt(sent)) }, false)
}

// refreshBy sends a holder's own renewal (Refresh) by send. A life nothing watches (watched false)
// counts from its send when it is answered; a watchdog's keeps its own count.
func (l *life) refreshBy(ctx context.Context, watched bool, send func(context.Context) error) error {
	sent := time.Now()
	err := send(ctx)
	if err == nil && !watched {
		l.refreshed(sent)
	}
	return err
}

// refreshedUntil tells the life that a renewal keeps the lock until end (Redlock's validity).
func (l *life) refreshedUntil(end time.Time) {
	l.step(func(c *core.Life) core.Ready { return c.Refreshed(time.Now(), end) }, false)
}

// until is when the lease counts itself lost, as things stand.
func (l *life) until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Until()
}
