package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// Semaphore is Redisson's RSemaphore, wire-compatible with Java Redisson's getSemaphore(name):
// the semaphore is a string key holding the number of permits available, and a release
// publishes that number on "redisson_sc:{<name>}". It is a description on the library's core:
// its waiters wait in the same in-process queue as every kind's (handoff.go, core.Queue), and a
// release wakes the head through the same subscriber (pubsub.go). What it adds is how it tries
// (sem_acquire.lua) and that a head which won leaves the next head free to try at once (a
// permit taken leaves the others free, so it passes a lease of 0 to the queue).
//
// A permit belongs to nobody: Release gives back permits whoever took them, and a holder that
// dies never gives its permits back (the semaphore shrinks by them for good). ExpirableSemaphore
// is the one whose permits come back.
//
// A Semaphore is shared and safe for concurrent use; build one per process and Redis.
type Semaphore struct{ *semBase }

// NewSemaphore returns a Semaphore on one Redis. It honours WithLogger and WithShardedPubSub
// (the pub/sub that announces a release, as for NewReentrant), and refuses the other options.
func NewSemaphore(rdb redis.UniversalClient, opts ...Option) (*Semaphore, error) {
	b, err := newSemBase("semaphore", rdb, []string{"WithLogger", "WithShardedPubSub"}, opts)
	if err != nil {
		return nil, err
	}
	return &Semaphore{b}, nil
}

// TrySetPermits sets the semaphore's number of permits to n when it has none set yet (true), and
// tells the waiters; false when it was set already, whatever its count. n must be above 0.
func (s *Semaphore) TrySetPermits(ctx context.Context, name string, n int) (bool, error) {
	return s.trySet(ctx, name, n)
}

// Acquire takes n permits of name, waiting up to wait for them (0: one attempt): nil when taken,
// ErrNotObtained when the wait ran out (joined with ctx.Err() when ctx ended first, and with
// ErrClosed when the Semaphore was closed). A release wakes a waiter; nothing polls. Within a
// process, waiters are served in arrival order: a waiter for many permits holds back the waiters
// behind it. n must be above 0.
func (s *Semaphore) Acquire(ctx context.Context, name string, n int, wait time.Duration) error {
	if err := s.check("acquire", name, n, wait); err != nil {
		return err
	}
	return s.wait(ctx, name, wait, func(ctx context.Context) (bool, time.Duration, error) {
		t, err := attempt(ctx, s.rdb, s.sub.mode, core.Semaphore{N: n}, core.Ask{Key: name})
		return t.Held, t.Wait, err
	})
}

// TryAcquire takes n permits of name when they are available now: true when taken, false when
// not (a Redis failure is an error).
func (s *Semaphore) TryAcquire(ctx context.Context, name string, n int) (bool, error) {
	err := s.Acquire(ctx, name, n, 0)
	if errors.Is(err, ErrNotObtained) && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
		return false, nil
	}
	return err == nil, err
}

// Release gives n permits of name back and wakes the waiters. Like Redisson's, it checks nothing:
// a release of permits never acquired raises the count above what TrySetPermits set. n must be
// above 0.
func (s *Semaphore) Release(ctx context.Context, name string, n int) error {
	if err := s.check("release", name, n, 0); err != nil {
		return err
	}
	return releaseHold(ctx, nil, s.rdb, s.sub.mode, core.Semaphore{N: n}, core.Ask{Key: name}, nil)
}

// AvailablePermits is the number of permits of name available now: 0 for a semaphore never set.
func (s *Semaphore) AvailablePermits(ctx context.Context, name string) (int, error) {
	if err := s.check("count", name, 1, 0); err != nil {
		return 0, err
	}
	n, err := s.rdb.Get(ctx, name).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, redisErr("count permits of "+name, err)
	}
	return n, nil
}

// semBase is what both semaphores share: the client, the waiters' queue and its subscriber to
// the "redisson_sc" channels.
type semBase struct {
	kind    string
	rdb     redis.UniversalClient
	log     *slog.Logger
	lease   time.Duration // the default lease (ExpirableSemaphore)
	sub     *subscriber
	queue   *handoff
	closing context.Context
	close   context.CancelCauseFunc
	once    sync.Once
	err     error // Close's
}

// newSemBase applies opts for kind, refusing an option kind does not honour (even one every
// Locker does), and starts the waiters' queue.
func newSemBase(kind string, rdb redis.UniversalClient, honours []string, opts []Option) (*semBase, error) {
	if isNil(rdb) {
		return nil, fmt.Errorf("lock: %s: %w: no Redis client", kind, ErrUnavailable)
	}
	var given settings
	for _, o := range opts {
		if o != nil {
			o(&given)
		}
	}
	for _, g := range given.given {
		if !g.optional && !slices.Contains(honours, g.name) {
			return nil, fmt.Errorf("lock: %s: option %s does not apply to New%s (it honours %s)",
				kind, g.name, constructorOf(kind), strings.Join(honours, ", "))
		}
	}
	d, err := apply(kindSpec{name: kind, options: fixed(honours...)}, settings{Data: rdb}, opts)
	if err != nil {
		return nil, err
	}
	if d.Lease <= 0 {
		return nil, fmt.Errorf("lock: %s: lease %s: want above 0", kind, d.Lease)
	}
	b := &semBase{kind: kind, rdb: rdb, log: d.Logger, lease: d.Lease}
	b.sub, b.queue = newChannelQueue(rdb, d.Logger, newPubsubMode(rdb, d.Subscription), core.Semaphore{})
	b.closing, b.close = context.WithCancelCause(context.Background())
	return b, nil
}

// check refuses a call the semaphore cannot honour, before anything is sent.
func (b *semBase) check(op, name string, n int, wait time.Duration) error {
	switch {
	case name == "":
		return fmt.Errorf("lock: %s: %s: the name is empty: want the semaphore's name", b.kind, op)
	case strings.ContainsAny(name, "{}") && hashTag(name) == "":
		return fmt.Errorf("lock: %s: %s %q: braces in a name must enclose a hash tag ({tag}, not empty)", b.kind, op, name)
	case n <= 0:
		return fmt.Errorf("lock: %s: %s %s: %d permits: want above 0", b.kind, op, name, n)
	case wait < 0:
		return fmt.Errorf("lock: %s: %s %s: wait %s: want 0 (one attempt) or above", b.kind, op, name, wait)
	}
	return nil
}

// trySet is TrySetPermits, the same script for both semaphores.
func (b *semBase) trySet(ctx context.Context, name string, n int) (bool, error) {
	if err := b.check("set permits of", name, n, 0); err != nil {
		return false, err
	}
	set, err := b.sub.mode.run(ctx, b.rdb, script.SemSetCall(name, n)).Bool()
	if err != nil {
		return false, redisErr("set permits of "+name, err)
	}
	return set, nil
}

// wait runs try in name's queue (handoff.obtain) until it holds, the wait ends, ctx ends or the
// semaphore is closed. A winner leaves the next head free to try at once (core.WinnerHint:
// permits are shared).
func (b *semBase) wait(ctx context.Context, name string, wait time.Duration, try func(context.Context) (bool, time.Duration, error)) error {
	if b.closing.Err() != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, name, ErrClosed)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(b.closing, func() { cancel(ErrClosed) })()
	err := b.queue.obtain(wctx, name, "", wait, core.WinnerHint(core.Semaphore{}, b.lease), false, try)
	if err != nil && errors.Is(context.Cause(wctx), ErrClosed) && ctx.Err() == nil {
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, name, ErrClosed)
	}
	return err
}

// Close ends every wait within a few milliseconds (ErrNotObtained joined with ErrClosed), makes
// later acquisitions fail so, and ends the subscription. Permits held stay held. Closing twice is
// a no-op.
func (b *semBase) Close() error {
	b.once.Do(func() {
		b.close(ErrClosed)
		b.queue.close()
		b.err = b.sub.Close()
	})
	return b.err
}
