package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// watchdog keeps a lease alive by calling renew every interval while the lock is held, like
// Redisson's renewExpiration (lease/3). It stops for good when renew reports the lock is no
// longer ours or fails, and then closes Lost so the holder learns the lock is gone.
//
// Its commands run under base: the acquiring context's values without its cancellation, so
// tracing and client hooks see a renewal as part of the acquisition that started it.
type watchdog struct {
	base     context.Context
	lease    time.Duration
	interval time.Duration
	renew    func(ctx context.Context) (renewOutcome, error)
	onFail   func(error)

	lost     chan struct{}
	lostOnce sync.Once
	renewals atomic.Int64
	// cancel ends base when the watchdog stops, and with it a renewal under way: a release must
	// not wait for a renewal stuck on a Redis that does not answer. base ended = stopped.
	cancel context.CancelFunc
	lastOK time.Time // when the last successful renewal (or the start) was sent; rounds' alone
	// ttl is how long the lock lives from lastOK: the lease, or until the first renewal the
	// shorter TTL of a lock handed over short (waiting.go rule 16); rounds' alone.
	ttl time.Duration

	// A round runs on a timer's goroutine, not on one of the watchdog's own: most holds end
	// before the first round, and their release then stops a timer instead of waking a
	// goroutine and waiting for it to exit (that wait sat between every holder and its release).
	mu      sync.Mutex
	timer   *time.Timer
	running chan struct{} // non-nil while a round runs; closed when it ends
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
// acquireCtx; ttl is what the lock has now: the lease, or less for a lock handed over short, which
// the first round then pushes out to the lease a third of the way into ttl (waiting.go rule 16).
// onFail (may be nil) is told why renewal ended when it ends by a loss.
func startWatchdog(acquireCtx context.Context, lease, ttl time.Duration, renew func(ctx context.Context) (renewOutcome, error), onFail func(error)) *watchdog {
	base, cancel := context.WithCancel(context.WithoutCancel(acquireCtx))
	w := &watchdog{
		base: base, cancel: cancel, lease: lease, interval: max(lease/3, time.Millisecond), renew: renew, onFail: onFail,
		lost: make(chan struct{}), lastOK: time.Now(), ttl: min(ttl, lease),
	}
	w.mu.Lock()
	w.timer = time.AfterFunc(max(w.ttl/3, time.Millisecond), w.fire)
	w.mu.Unlock()
	return w
}

// fire runs one round when the timer goes off, and sets the timer for the next one while the
// lock is renewed and the watchdog not stopped.
func (w *watchdog) fire() {
	w.mu.Lock()
	if w.stopped() {
		w.mu.Unlock()
		return
	}
	done := make(chan struct{})
	w.running = done
	w.mu.Unlock()

	r, err := w.round()

	w.mu.Lock()
	w.running = nil
	close(done)
	if r == renewed {
		w.renewals.Add(1)
		if !w.stopped() {
			w.timer.Reset(w.interval)
		}
	}
	w.mu.Unlock()
	if r == renewed || r == renewStopped {
		return
	}
	if err == nil {
		err = errLost
	}
	if w.onFail != nil {
		w.onFail(err)
	}
	w.markLost()
}

// round renews once and, after a transient failure, again every pause, while the lock is surely
// still ours: until 0.9 × its TTL (the lease: 3 intervals) after the last success. This is the one
// renewal policy of every lock.
func (w *watchdog) round() (renewOutcome, error) {
	pause := min(max(w.ttl/30, time.Millisecond), 50*time.Millisecond)
	for {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(w.base, max(w.ttl/3, time.Millisecond))
		r, err := w.renew(ctx)
		cancel()
		select {
		case <-w.base.Done():
			return renewStopped, nil
		default:
		}
		switch r {
		case renewed:
			w.lastOK, w.ttl = sent, w.lease
			return r, nil
		case renewFailed:
		default:
			return r, err
		}
		safeUntil := w.lastOK.Add(w.ttl * 9 / 10)
		if time.Until(safeUntil) <= pause {
			return renewLost, err
		}
		select {
		case <-w.base.Done():
			return renewStopped, nil
		case <-time.After(pause):
		}
	}
}

// stopped reports whether Stop was called.
func (w *watchdog) stopped() bool { return w.base.Err() != nil }

func (w *watchdog) markLost() { w.lostOnce.Do(func() { close(w.lost) }) }

// Lost is closed when renewal failed: the lock may now be someone else's. A nil watchdog (an
// explicit lease) has none.
func (w *watchdog) Lost() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.lost
}

// Renewals counts successful renewals (0 for a nil watchdog).
func (w *watchdog) Renewals() int64 {
	if w == nil {
		return 0
	}
	return w.renewals.Load()
}

// Stop ends renewal (on release, or when the Locker closes); when a round is under way it cancels
// it and waits for it to end, so no renewal is sent after Stop returns. A nil watchdog has nothing
// to stop.
func (w *watchdog) Stop() {
	if w == nil {
		return // an explicit lease: nothing renews
	}
	w.mu.Lock()
	w.timer.Stop()
	w.cancel()
	running := w.running
	w.mu.Unlock()
	if running != nil {
		<-running
	}
}
