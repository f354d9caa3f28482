package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// watchdog keeps a lease alive by calling renew every interval while the lock is held, like
// Redisson's renewExpiration (lease/3). Its life is an expiry of its own: each renewal that
// succeeds moves it to a lease after that renewal was sent (less the drift margin), and when it
// runs out, Lost closes on time whatever command is still blocked. It stops for good when renew
// reports the lock is no longer ours, when its life runs out, or when the lease is given back.
//
// Its commands run under base: the acquiring context's values without its cancellation, so
// tracing and client hooks see a renewal as part of the acquisition that started it.
type watchdog struct {
	base     context.Context
	lease    time.Duration
	interval time.Duration
	renew    func(ctx context.Context) (renewOutcome, error)

	life     *expiry
	why      atomic.Pointer[error] // the error that lost the lease, for onFail
	renewals atomic.Int64
	// cancel ends base when the watchdog stops, and with it a renewal under way. base ended =
	// stopped.
	cancel context.CancelFunc
	// ttl is how long the lock lives from the last successful renewal: the lease, or until the
	// first renewal the shorter TTL of a lock handed over short; rounds' alone.
	ttl time.Duration

	// A round runs on a timer's goroutine, not on one of the watchdog's own: most holds end
	// before the first round, and their release then stops a timer instead of waking a goroutine.
	mu    sync.Mutex
	timer *time.Timer
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

// startWatchdog starts renewing a lock of the given lease every lease/3, with the values of
// acquireCtx; ttl is what the lock has now, until when it runs out by our clock (its TTL counted
// from when the command that set it was sent): the lease, or less for a lock handed over short,
// which the first round then pushes out to the lease a third of the way into ttl. onFail (may be
// nil) is told why the lease was lost when it is.
func startWatchdog(acquireCtx context.Context, lease, ttl time.Duration, until time.Time, renew func(ctx context.Context) (renewOutcome, error), onFail func(error)) *watchdog {
	base, cancel := context.WithCancel(context.WithoutCancel(acquireCtx))
	w := &watchdog{
		base: base, cancel: cancel, lease: lease, interval: max(lease/3, time.Millisecond), renew: renew,
		ttl: min(ttl, lease),
	}
	w.life = newExpiry(safeEnd(until.Add(-ttl), ttl), func() {
		w.stop()
		if onFail != nil {
			err := errLeaseRanOut
			if p := w.why.Load(); p != nil {
				err = *p
			}
			onFail(err)
		}
	})
	w.mu.Lock()
	w.timer = time.AfterFunc(max(w.ttl/3, time.Millisecond), w.fire)
	w.mu.Unlock()
	return w
}

// fire runs one round when the timer goes off, and sets the timer for the next one while the
// lock is renewed and the watchdog not stopped.
func (w *watchdog) fire() {
	if w.stopped() {
		return
	}
	r, err := w.round()
	switch r {
	case renewed:
		w.renewals.Add(1)
		w.mu.Lock()
		if !w.stopped() {
			w.timer.Reset(w.interval)
		}
		w.mu.Unlock()
	case renewLost:
		if err == nil {
			err = errLost
		}
		w.why.Store(&err)
		w.life.lose()
	}
}

// round renews once and, after a transient failure, again every pause while the lease lives: its
// life's timer ends the round when the lease runs out first. This is the one renewal policy of
// every lock.
func (w *watchdog) round() (renewOutcome, error) {
	pause := min(max(w.ttl/30, time.Millisecond), 50*time.Millisecond)
	for {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(w.base, max(w.ttl/3, time.Millisecond))
		r, err := w.renew(ctx)
		cancel()
		if w.stopped() {
			return renewStopped, nil // given back, or the lease ran out meanwhile
		}
		switch r {
		case renewed:
			w.ttl = w.lease
			w.life.extend(safeEnd(sent, w.lease))
			return r, nil
		case renewFailed:
		default:
			return r, err
		}
		if !sleep(w.base, pause) {
			return renewStopped, nil
		}
	}
}

// stopped reports whether the watchdog stopped (given back, lost, or its Locker closed).
func (w *watchdog) stopped() bool { return w.base.Err() != nil }

// stop ends renewal: no round starts after it, and one under way is cancelled.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.cancel()
	w.timer.Stop()
	w.mu.Unlock()
}

// Lost is closed when the lease was lost (renewal refused, or its life ran out) or given back. A
// nil watchdog (an explicit lease) has none.
func (w *watchdog) Lost() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.life.channel()
}

// Renewals counts successful renewals (0 for a nil watchdog).
func (w *watchdog) Renewals() int64 {
	if w == nil {
		return 0
	}
	return w.renewals.Load()
}

// Stop ends renewal and closes Lost (on release); it does not wait for a renewal under way,
// which is cancelled: a renewal that still lands only extends what is already ours. A nil
// watchdog has nothing to stop.
func (w *watchdog) Stop() {
	if w == nil {
		return // an explicit lease: nothing renews
	}
	w.stop()
	w.life.end()
}
