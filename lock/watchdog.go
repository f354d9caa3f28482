package lock

import (
	"context"
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
	interval time.Duration
	renew    func(ctx context.Context) (renewOutcome, error)
	onFail   func(error)

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	renewals atomic.Int64
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
)

// startWatchdog starts renewing every interval, with the values of acquireCtx. onFail (may be
// nil) is told why renewal ended when it ends by a loss.
func startWatchdog(acquireCtx context.Context, interval time.Duration, renew func(ctx context.Context) (renewOutcome, error), onFail func(error)) *watchdog {
	w := &watchdog{
		base: context.WithoutCancel(acquireCtx), interval: interval, renew: renew, onFail: onFail,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go w.run()
	return w
}

func (w *watchdog) run() {
	defer close(w.done)
	t := time.NewTimer(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(w.base, w.interval)
			r, err := w.renew(ctx)
			cancel()
			switch r {
			case renewed:
				w.renewals.Add(1)
				t.Reset(w.interval)
			case renewStopped:
				return
			default:
				if err == nil {
					err = ErrLost
				}
				if w.onFail != nil {
					w.onFail(err)
				}
				w.markLost()
				return
			}
		}
	}
}

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

// Stop ends renewal (on release, or when the Locker closes) and waits for the goroutine to exit;
// a nil watchdog has nothing to stop.
func (w *watchdog) Stop() {
	if w == nil {
		return // an explicit lease: nothing renews
	}
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}
