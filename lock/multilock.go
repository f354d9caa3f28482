package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// multiLocker is NewMultilock (Redisson's RedissonMultiLock, https://redisson.org/docs/data-and-services/locks-and-synchronizers/): one
// reentrant lock, same layout and scripts, on every independent master, all of them required.
// They are taken in master order (so two buyers never hold halves of each other's set); a buyer
// that cannot get one of them gives back those it got before it retries or gives up, so a
// master that is down makes acquisition fail cleanly with nothing left locked elsewhere. Each
// part is renewed by its own watchdog; losing any part loses the whole lock.
type multiLocker struct {
	parts []*reentrantLocker
	addrs []string
	retry func() time.Duration
}

func newMultilock(d settings) (locker, error) {
	m := &multiLocker{retry: retryOr(d, 50*time.Millisecond, 150*time.Millisecond)}
	for _, c := range d.Masters {
		m.parts = append(m.parts, newReentrantOn("multilock", c, d, nil, false))
		m.addrs = append(m.addrs, clientAddr(c))
	}
	return m, nil
}

// Acquire takes key on every master in order, waiting at most opts.Wait in all.
func (m *multiLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	// One owner for every part and every retry, or the parts would not re-enter each other.
	opts.Owner = ownerOf(opts)
	deadline := time.Now().Add(opts.Wait)
	for {
		held := make([]*reentrantLease, 0, len(m.parts))
		var failed error
		for i, p := range m.parts {
			o := opts
			o.Wait = max(time.Until(deadline), 0)
			le, err := p.acquire(ctx, key, o)
			if err != nil {
				failed = fmt.Errorf("master %d of %d (%s): %w", i+1, len(m.parts), m.addrs[i], err)
				break
			}
			held = append(held, le)
		}
		if failed == nil {
			return newMultiLease(ctx, key, held, opts.Lease, !opts.ExplicitLease), nil
		}
		// Give back what we got before anything else, so no half-taken set blocks other buyers.
		if err := releaseParts(context.WithoutCancel(ctx), held); err != nil {
			failed = errors.Join(failed, fmt.Errorf("release the masters already taken: %w", err))
		}
		// A master that does not answer (refused, timed out) fails the acquisition at once: every
		// master is required, so waiting out the wait would only hold every buyer up for nothing.
		if errors.Is(failed, ErrUnavailable) && !errors.Is(failed, ErrNotObtained) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotObtained, key, failed)
		}
		left := time.Until(deadline)
		if errors.Is(failed, ErrNotObtained) || ctx.Err() != nil || left <= 0 {
			if errors.Is(failed, ErrNotObtained) {
				return nil, failed
			}
			return nil, fmt.Errorf("%w: %s: %w", ErrNotObtained, key, failed)
		}
		// A master answered with an error (OOM, too many clients, say): try the whole set
		// again after a short random pause (WithRetryDelay), until the wait runs out.
		if !sleep(ctx, min(m.retry(), left)) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotObtained, key, errors.Join(failed, ctx.Err()))
		}
	}
}

// releaseParts releases every part at once (a slow master does not hold up the others).
func releaseParts(ctx context.Context, parts []*reentrantLease) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			if p.gate.settled() {
				return // released by an earlier try of this release
			}
			if err := p.releaseAfter(ctx, nil); err != nil {
				errs[i] = fmt.Errorf("master %d: %w", i+1, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close ends every master's watchdogs and pub/sub connection.
func (m *multiLocker) Close() error {
	var errs []error
	for _, p := range m.parts {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// multiLease holds one reentrant lease per master.
type multiLease struct {
	key   string
	parts []*reentrantLease
	lost  chan struct{} // nil when the parts have no watchdog
	once  sync.Once     // closes lost
	stop  chan struct{}
	// life closes Lost of a lease without a watchdog: a lease from the last attempt.
	life life
	gate releaseGate
}

// newMultiLease builds the lease of parts, each taken for lease: with watch, it is lost when any
// part's watchdog loses its part; without, when its own life runs out.
func newMultiLease(ctx context.Context, key string, parts []*reentrantLease, lease time.Duration, watch bool) *multiLease {
	ml := &multiLease{key: key, parts: parts, stop: make(chan struct{})}
	if len(parts) == 0 || !watch {
		ml.life.startUnwatched(ctx, lease, lease, time.Time{}, nil) // nothing to push
		return ml
	}
	ml.lost = make(chan struct{})
	for _, p := range parts {
		go func() {
			select {
			case <-p.Lost():
				ml.lose()
			case <-ml.stop:
			}
		}()
	}
	return ml
}

// lose closes Lost, once.
func (ml *multiLease) lose() {
	if ml.lost != nil {
		ml.once.Do(func() { close(ml.lost) })
	}
}

func (ml *multiLease) Key() string  { return ml.key }
func (ml *multiLease) Token() int64 { return 0 }

// Lost is closed as soon as any master's lease is lost (without a watchdog: when the lease's own
// life runs out), or the lease is given back.
func (ml *multiLease) Lost() <-chan struct{} {
	if ml.lost == nil {
		return ml.life.Lost()
	}
	for _, p := range ml.parts {
		if isDone(p.Lost()) {
			ml.lose()
		}
	}
	return ml.lost
}

// Renewals counts the renewal rounds that reached every master (the smallest count of a part).
func (ml *multiLease) Renewals() int64 {
	var n int64 = -1
	for _, p := range ml.parts {
		if r := p.Renewals(); n < 0 || r < n {
			n = r
		}
	}
	return max(n, 0)
}

// Parts lists the lease on each master, in master order.
func (ml *multiLease) Parts() []heldLock {
	out := make([]heldLock, len(ml.parts))
	for i, p := range ml.parts {
		out[i] = p
	}
	return out
}

// releaseAfter executes the holder's pipeline p (nil: none) and gives the lock back on every
// master; any master where it was no longer held makes the whole release ErrNotHeld.
func (ml *multiLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	return ml.gate.release(ctx, p, ml.key, func() { close(ml.stop); ml.lose(); ml.life.Stop() }, func() error {
		execHeld(ctx, p)
		// A retry sends the release only to the masters where it did not get through.
		var left []*reentrantLease
		for _, p := range ml.parts {
			if !p.gate.settled() {
				left = append(left, p)
			}
		}
		return releaseParts(ctx, left)
	})
}

// refresh renews the lock on every master; any master where it is no longer held is ErrNotHeld.
// A lease without a watchdog counts its life from the send.
func (ml *multiLease) refresh(ctx context.Context) error {
	sent := time.Now()
	var errs []error
	for _, p := range ml.parts {
		errs = append(errs, p.refresh(ctx))
	}
	err := errors.Join(errs...)
	if err == nil && ml.lost == nil {
		ml.life.refreshed(sent)
	}
	return err
}
