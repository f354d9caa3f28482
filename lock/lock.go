// Package lock is a library of Redis distributed locks for Go, on go-redis v9:
//
//   - NewLua: SET NX PX with a random value, released by a Lua compare-and-delete, so a holder
//     never deletes another's lock. Correct only while the critical section ends within the
//     lease: nothing renews it unless the holder calls Lease.Refresh.
//   - NewReentrant: Redisson's RLock, wire-compatible with Java Redisson on the same lock: a hash
//     of hold counts per owner, renewed by a watchdog every lease/3 while held.
//   - NewFair: Redisson's RFairLock: the reentrant lock plus a queue in Redis that serves waiters
//     in the order they came, across processes.
//   - NewFenced: every acquisition carries a fencing token larger than any before it, for a
//     resource that refuses stale writes (the only defence against a holder paused past its
//     lease).
//   - NewMultilock: Redisson's MultiLock, one reentrant lock on each of several independent
//     Redis servers, all required.
//   - NewRedlock: Redlock over independent masters (on redsync); WithFencingTokens adds tokens.
//   - NewReadWrite: Redisson's RReadWriteLock, its read side (shared) and its write side
//     (exclusive) as two Lockers, wire-compatible with Java Redisson.
//
// A Locker is shared and safe for concurrent use: every Acquire hands out a *Lease that carries
// its own token. Waiters are woken by the release (pub/sub, and in-process hand-over) instead of
// polling: within a process they take turns in one queue per lock, and across processes a
// release wakes one waiter (one per process for NewMultilock, NewRedlock and RFencedLock's
// layout, and where a Redisson client waits for the same lock). For a maintainer, the rules of
// waiting are one numbered list, in waiting.go. Every lease can be renewed by hand
// (Lease.Refresh); the locks with a watchdog also renew on their own every lease/3 until
// Release. One renewal policy holds for every lock: a renewal that fails on a transient error
// (no answer, a timeout) is retried while the lease lasts. A lease's life is a timer of its own:
// Lease.Lost closes when the lease runs out by this process's clock (a lease after the send of
// the last renewal that succeeded, less a drift margin), whatever command is still blocked, or
// at once when Redis says the lock is someone else's, or when the lease is given back.
//
// Errors tell the cases apart with errors.Is: ErrNotObtained (the wait ran out; with ctx.Err()
// joined when the context ended first; ErrClosed joined when the Locker was closed), ErrNotHeld,
// ErrUnavailable (a server did not answer or would not serve until the wait ended: transient
// errors are ridden out within the wait), ErrNotReplicated, ErrUpgrade.
//
// The commands of an acquisition, its watchdog's renewals included, run under the values of the
// context given to Acquire (not its cancellation), so tracing and go-redis hooks see a renewal as
// part of the acquisition that started it. Package locktest uses that to crash or pause a holder
// in tests.
package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// Options tune one acquisition. The zero value is one attempt, the Locker's lease, the
// watchdog on (where the lock has one) and a new owner.
type Options struct {
	// Wait bounds how long Acquire waits for the lock. Zero means one attempt.
	Wait time.Duration
	// Lease is how long the lock lives in Redis without renewal. Zero means the Locker's lease
	// (WithLease; for the locks with a watchdog: the watchdog timeout, renewed every Lease/3).
	Lease time.Duration
	// ExplicitLease turns the watchdog off (Redisson's lock(leaseTime)): the lock expires Lease
	// after it was taken unless the holder calls Refresh.
	ExplicitLease bool
	// Owner identifies the holder for re-entry, like the thread id Redisson uses: acquisitions of
	// a reentrant, fair or multilock (or a fenced lock in RFencedLock's layout, where every
	// re-entry draws a new token) with the same Owner (on the same Locker) re-enter it and need
	// as many releases. Two goroutines given the same Owner therefore both "hold" it at once: give
	// each logical holder its own. Empty: a new owner for this acquisition alone. The other locks
	// refuse it (an error naming it; Locker.Reentrant tells).
	Owner string
}

// Locker acquires one kind of lock. It is safe for concurrent use; build one per process and
// lock, and share it. The promises every Locker keeps are listed once, in docs/library.md
// ("Guarantees"), and checked for every kind by the conformance suite (lock/conformance).
type Locker struct {
	impl locker
	// kind is the constructor's name, for errors.
	kind string
	// lease is the Locker's default lease (WithLease).
	lease time.Duration
	// owners: the kind honours Options.Owner (re-entry).
	owners bool
	// extra is what an acquisition may take past its wait on a server that answers: the replicas'
	// acknowledgement (WithReplicas).
	extra time.Duration
	// closing ends with Close: every wait of the Locker ends with ErrClosed.
	closing  context.Context
	close    context.CancelCauseFunc
	crew     *crew // runs the acquisitions and background releases
	once     sync.Once
	closeErr error

	// replicas, when set, makes an acquisition wait for replicas of data (WithReplicas) for the
	// kinds that do not wait inside their own acquire.
	replicas *replicaSync
	data     redis.UniversalClient

	// held are the leases not yet given back, and acquiring the acquisitions under way, for Close.
	mu        sync.Mutex
	held      map[*Lease]struct{}
	acquiring map[*acquisition]struct{}
}

// answerGrace is how long past its wait an acquisition may take when a server does not answer
// (Guarantees, clause 6), and abandonGrace how long a goroutine of the kind is given to return on
// its own once the acquisition's context has ended, before Acquire returns without it.
const (
	answerGrace  = 350 * time.Millisecond
	abandonGrace = 40 * time.Millisecond
)

// Acquire blocks until the lock named key is held, opts.Wait has elapsed (ErrNotObtained), ctx is
// done (ErrNotObtained joined with ctx.Err(), never ErrUnavailable) or the Locker is closed
// (ErrNotObtained joined with ErrClosed). A server that refuses or resets connections, is loading
// or read-only (a failover) is tried again, backing off, until the wait ends; then, or when a
// server does not answer, it is ErrUnavailable, within opts.Wait + 400 ms (and the machine's
// scheduling delay). An empty key, or one whose braces make no hash tag, is refused.
func (l *Locker) Acquire(ctx context.Context, key string, opts Options) (*Lease, error) {
	if l == nil || l.impl == nil {
		return nil, fmt.Errorf("lock: acquire %s on a nil Locker: %w", key, ErrUnavailable)
	}
	if err := l.check(key, opts); err != nil {
		return nil, err
	}
	if l.closing.Err() != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotObtained, key, ErrClosed)
	}
	if opts.Lease == 0 {
		opts.Lease = l.lease // the kinds are given the lease to use
	}
	if l.owners && opts.Owner == "" {
		// One owner for the whole acquisition: an attempt made again after one that got no
		// answer re-enters what that one took, not waits behind it (orphans).
		opts.Owner = uuid.NewString()
	}
	ttl := opts.Lease
	start := time.Now()
	actx := &acquisition{}
	actx.Context, actx.cancel = context.WithDeadlineCause(ctx, start.Add(max(opts.Wait, 0)+answerGrace+l.extra), errNoAnswer)
	defer actx.cancel()
	if !l.enter(actx) {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotObtained, key, ErrClosed)
	}
	defer l.leave(actx)

	// The kind runs in a goroutine of its own, and Acquire returns on time without it: a call
	// to a server that does not answer blocks until the client's read timeout whatever the
	// context says (go-redis's default, ContextTimeoutEnabled false), and a kind's clean-up
	// (leaving a line, giving back a partial win) runs on a context of its own. A kind that sends
	// its commands through offload runs here instead (abandonAfter, inliner).
	//
	// An acquisition that ends without the lock gives back what its unanswered attempts may
	// still take (orphan.go, waiting.go rule 9), also when Acquire has returned without it.
	actx.l, actx.key, actx.opts = l, key, opts
	h, err := actx.abandonAfter()
	if err != nil {
		return nil, l.acquireErr(ctx, actx, key, err)
	}
	le := &Lease{impl: h, locker: l, ttl: ttl}
	if !l.track(le) {
		// Close came while the lock was being taken: it is given back like the others.
		le.giveBack()
		return nil, fmt.Errorf("%w: %s: %w", ErrNotObtained, key, ErrClosed)
	}
	return le, nil
}

// ride runs the kind's acquisition and, after a transient failure (a refused or reset
// connection, a server loading its data or read-only during a failover), again with what is left
// of the wait, backing off, so a failover costs a waiter time, not its wait. What the attempts
// that got no answer may still take is given back when the acquisition ends without the lock
// (orphans).
func (l *Locker) ride(ctx context.Context, key string, opts Options, clock *attemptClock) (heldLock, error) {
	deadline := time.Now().Add(opts.Wait)
	for n := 0; ; n++ {
		h, err := l.impl.Acquire(ctx, key, opts)
		if err == nil && l.replicas != nil {
			if err = l.replicas.confirm(ctx, l.data, key, h); err != nil {
				h = nil
			}
		}
		if err == nil {
			// What attempts that got no answer took is not given back: with the same owner, that
			// is the hold just won. Only a count it added is (orphans.won).
			clock.orphans.won(ctx)
			return h, nil
		}
		// No attempt starts within a pause of the wait's end: an attempt may take as long as the
		// client's own retries, and the wait is a bound.
		pause := core.RidePause(n)
		if !transient(err) || !core.Rides(time.Until(deadline), pause) || !sleep(ctx, pause) {
			clock.orphans.giveBack(context.WithoutCancel(ctx), opts.Lease)
			return nil, err
		}
		opts.Wait = max(time.Until(deadline), 0)
	}
}

// transient reports whether a failed attempt met a server that may serve again soon: no answer, a
// refused or reset connection, a server loading or read-only during a failover. A closed client,
// a refused password, a server that will not acknowledge on enough replicas, or an ended context
// are not.
func transient(err error) bool {
	return errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrNotReplicated) &&
		!errors.Is(err, redis.ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!redis.HasErrorPrefix(err, "NOAUTH") && !redis.HasErrorPrefix(err, "WRONGPASS")
}

// enter records an acquisition under way, for Close to end; false when the Locker is closed.
func (l *Locker) enter(a *acquisition) bool { return addUnlessClosed(l, &l.acquiring, a) }

// leave forgets an acquisition that has ended.
func (l *Locker) leave(a *acquisition) { removeFrom(l, &l.acquiring, a) }

// track records a lease as held, for Close to give back; false when the Locker is closed.
func (l *Locker) track(le *Lease) bool { return addUnlessClosed(l, &l.held, le) }

// untrack forgets a lease given back (or about to be).
func (l *Locker) untrack(le *Lease) { removeFrom(l, &l.held, le) }

// addUnlessClosed adds k to the set *m of what Close must end, under l.mu; false when the Locker
// is closed.
func addUnlessClosed[K comparable](l *Locker, m *map[K]struct{}, k K) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing.Err() != nil {
		return false
	}
	if *m == nil {
		*m = map[K]struct{}{}
	}
	(*m)[k] = struct{}{}
	return true
}

// removeFrom takes k out of the set *m, under l.mu.
func removeFrom[K comparable](l *Locker, m *map[K]struct{}, k K) {
	l.mu.Lock()
	delete(*m, k)
	l.mu.Unlock()
}

// acquireErr is the error of a failed acquisition, the same for every kind: the Locker closed,
// no answer within the wait, the caller's context ended (ErrNotObtained joined with ctx.Err()),
// or the kind's own error.
func (l *Locker) acquireErr(ctx, actx context.Context, key string, err error) error {
	switch cause := context.Cause(actx); {
	case l.closing.Err() != nil && errors.Is(cause, context.Canceled) && ctx.Err() == nil:
		// Close cancelled it (Locker.acquiring).
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, key, ErrClosed)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The kind's call ended with the caller's context: that says nothing of Redis.
		return fmt.Errorf("%w: %s: %w", ErrNotObtained, key, ctx.Err())
	case ctx.Err() != nil:
		if !errors.Is(err, ErrNotObtained) {
			err = fmt.Errorf("%w: %w", ErrNotObtained, err)
		}
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w: %w", err, ctx.Err())
		}
		return err
	case errors.Is(cause, errNoAnswer):
		return fmt.Errorf("%w: %s: %w: %w", ErrNotObtained, key, ErrUnavailable, errNoAnswer)
	case !errors.Is(err, ErrNotObtained) && errors.Is(err, ErrUnavailable):
		return fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	return err
}

// check refuses an acquisition the kind cannot honour as asked, naming the field.
func (l *Locker) check(key string, opts Options) error {
	switch {
	case key == "":
		return fmt.Errorf("lock: %s: acquire: the key is empty: want a name for the lock", l.kind)
	case strings.ContainsAny(key, "{}") && hashTag(key) == "":
		return fmt.Errorf("lock: %s: acquire %q: braces in a key must enclose a hash tag ({tag}, not empty), or the keys and channels kept beside the lock would hash to another Redis Cluster slot", l.kind, key)
	case opts.Lease < 0:
		return fmt.Errorf("lock: %s: acquire %s: Options.Lease %s: want 0 (the Locker's) or above", l.kind, key, opts.Lease)
	case opts.Wait < 0:
		return fmt.Errorf("lock: %s: acquire %s: Options.Wait %s: want 0 (one attempt) or above", l.kind, key, opts.Wait)
	case opts.Owner != "" && !l.owners:
		return fmt.Errorf("lock: %s: acquire %s: Options.Owner %q: this kind has no re-entry, so no owners", l.kind, key, opts.Owner)
	}
	return nil
}

// run is the acquisition on a goroutine of the Locker's crew: the kind's, ridden through
// transient failures (ride); its result goes to done.
func (a *acquisition) run() {
	h, err := a.l.ride(a, a.key, a.opts, &a.clock)
	a.done <- acquired{h, err}
}

// abandonAfter runs the acquisition on one of the crew's goroutines and returns what it returns,
// or, once the acquisition's context has ended and it has not returned within abandonGrace, that
// context's cause; a lock it wins later is given back (won for a caller that has gone). A kind
// whose waits all end with the context and whose commands it sends through offload runs in the
// caller's goroutine instead (inliner): a lock handed over in this process then costs no
// goroutine switch, and a command is what goes to the crew.
func (a *acquisition) abandonAfter() (heldLock, error) {
	if in, ok := a.l.impl.(inliner); ok && a.l.replicas == nil && in.inline() {
		a.inline.Store(true)
		defer a.inline.Store(false)
		return a.l.ride(a, a.key, a.opts, &a.clock)
	}
	done := results.Get().(chan acquired)
	a.done = done
	a.l.crew.do(a)
	if r, ok := await(a, done, &a.abandonAt); ok {
		results.Put(done)
		return r.h, r.err
	}
	go func() {
		r := <-done
		results.Put(done)
		if r.err == nil {
			rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			_ = r.h.releaseAfter(rctx, nil)
		}
	}()
	return nil, context.Cause(a)
}

// inliner is implemented by a kind that can run an acquisition in its caller's goroutine: every
// wait of it ends with its context, and every command it sends goes through offload. inline
// reports whether it can now (the line: once its grant channel is subscribed, which sends a
// command of its own).
type inliner interface{ inline() bool }

// acquired is what an acquisition's kind returned.
type acquired struct {
	h   heldLock
	err error
}

// results are abandonAfter's channels, each empty when put back (its one result received), so an
// acquisition does not make one.
var results = sync.Pool{New: func() any { return make(chan acquired, 1) }}

// Close ends every wait of the Locker within a few milliseconds (ErrNotObtained joined with
// ErrClosed), makes later Acquire calls fail at once the same way, gives back every lease still
// held (their renewals stop and their Lost channels close at once; each release is bounded by
// 2 s, and one that gets no answer leaves the lock to expire at the end of its lease), and ends
// the Locker's own connections (the waiters' subscriptions). A closed Locker holds nothing beyond
// a lease. A lease's Release after Close answers how Close's release ended. Closing twice is a
// no-op.
func (l *Locker) Close() error {
	if l == nil || l.impl == nil {
		return nil
	}
	l.once.Do(func() {
		l.mu.Lock()
		l.close(ErrClosed)
		for a := range l.acquiring {
			a.cancel()
		}
		held := l.held
		l.held = nil
		l.mu.Unlock()
		var wg sync.WaitGroup
		for le := range held {
			wg.Go(le.giveBack)
		}
		wg.Wait()
		l.closeErr = l.impl.Close()
	})
	return l.closeErr
}

// DefaultLease is the lease an acquisition gets when Options.Lease is 0: WithLease's, or on a nil
// Locker the library's default (30 s, Redisson's lockWatchdogTimeout), so a program can size its
// own timeouts from the one figure.
func (l *Locker) DefaultLease() time.Duration {
	if l == nil || l.lease <= 0 {
		return defaultLease
	}
	return l.lease
}

// Reentrant reports whether the Locker's acquisitions honour Options.Owner (re-entry):
// NewReentrant, NewFair, NewMultilock and NewFenced in RFencedLock's layout. The others refuse an
// Owner.
func (l *Locker) Reentrant() bool { return l != nil && l.owners }

// Lease is one held lock.
type Lease struct {
	impl   heldLock
	locker *Locker // nil for a part of a multilock's lease (Parts)
	// ttl is the lease asked for (Options.Lease, or the Locker's).
	ttl time.Duration
	// ended: Release (or Close) was called; Lost is closed from then on.
	ended atomic.Bool

	mu sync.Mutex
	// pending is a release still under way after its caller's context ended; first is the lease's
	// own for its first release run in the caller's goroutine.
	pending *pendingRelease
	first   pendingRelease
	// byClose is how Close's release of the lease ended, for the holder's Release to answer.
	byClose atomic.Pointer[error]
}

// Key is the lock's key.
func (le *Lease) Key() string { return le.impl.Key() }

// Token is the fencing token of this acquisition: 0 for locks without fencing.
func (le *Lease) Token() int64 { return le.impl.Token() }

// Lost is closed when the lease no longer protects its holder: the holder learned the lock is
// gone (its watchdog was refused, Redlock's validity ran out), or the lease ran out by this
// process's clock before a renewal was answered (counted from when the command that took it, or
// the last renewal or Refresh that succeeded, was sent, less the drift margin: 1% of the lease
// plus 2 ms), or the lease was given back (Release, ReleaseAfter, Locker.Close). It closes on a
// timer of the lease's own, with a watchdog or without, whatever command is blocked, and a call
// to Lost after that moment returns it closed even when the timer fires late: a holder that
// checks Lost before its write never writes after another could hold the lock. It is never nil.
func (le *Lease) Lost() <-chan struct{} {
	if le.ended.Load() {
		return closedChan
	}
	return le.impl.Lost()
}

// closedChan is the Lost of a lease given back.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// errPart refuses the release or refresh of one part of a multilock's lease.
var errPart = errors.New("a part of a multilock's lease is released and refreshed with the whole lease")

// end marks the lease given back: Lost closes, and Close no longer needs to give it back.
func (le *Lease) end() {
	if le.ended.Swap(true) {
		return
	}
	if le.locker != nil {
		le.locker.untrack(le)
	}
}

// Release gives the lock back: at once its renewal stops and Lost closes, whatever ctx. Releasing
// twice, or a lock no longer held, is ErrNotHeld. The release is sent on a context of the
// library's own (the values of ctx, not its end), and again every 100 ms while the server does
// not answer, until it gets through, is refused, or the lock would have expired anyway: the lock
// is free at the latest when its lease would have ended. Release returns when the answer comes or
// ctx ends, whatever the client's timeouts: a release that got no answer by then wraps
// ErrUnavailable and ctx.Err(); one whose ctx had ended before the call wraps ctx.Err() alone. It
// goes on in the background, and a later call learns how it ended.
func (le *Lease) Release(ctx context.Context) error {
	if le.locker == nil {
		return fmt.Errorf("lock: release %s: %w", le.Key(), errPart)
	}
	if p := le.byClose.Swap(nil); p != nil {
		return *p
	}
	le.end()
	le.mu.Lock()
	pend := le.pending
	if pend != nil && isDone(pend.done) {
		// An earlier call's release ended in the background.
		le.pending = nil
		if pend.err == nil || !retryable(pend.err) {
			le.mu.Unlock()
			return pend.err
		}
		pend = nil
	}
	if pend == nil && ctx.Done() == nil {
		// Nothing can end the caller's wait: the release runs here, as it would elsewhere while
		// the caller waited for it.
		pend = &le.first
		if pend.done != nil {
			pend = &pendingRelease{} // the first was a release that got no answer
		}
		le.pending = pend // its done channel is made only for a second caller who waits on it
		le.mu.Unlock()
		le.settleHere(ctx, pend, false)
		return le.settled(ctx, pend)
	}
	if pend == nil {
		// The release runs in a goroutine of its own (as an acquisition does), so Release returns
		// when ctx ends whatever the client's timeouts, and it goes on there while the server
		// does not answer.
		pend = le.settle(context.WithoutCancel(ctx), false)
	}
	if pend.done == nil {
		pend.done = make(chan struct{}) // a release running in another caller's goroutine
	}
	le.mu.Unlock()
	if err := ctx.Err(); err != nil {
		// A later call learns how the release went.
		return fmt.Errorf("lock: release %s: the context had ended; the release goes on in the background: %w", le.Key(), err)
	}
	select {
	case <-pend.done:
		return le.settled(ctx, pend)
	case <-ctx.Done():
		return fmt.Errorf("lock: release %s: %w: no answer before the context ended: %w", le.Key(), ErrUnavailable, ctx.Err())
	}
}

// settled is how a release that has ended went, for a caller whose context is ctx.
func (le *Lease) settled(ctx context.Context, pend *pendingRelease) error {
	le.mu.Lock()
	if le.pending == pend {
		le.pending = nil
	}
	le.mu.Unlock()
	if pend.err != nil && retryable(pend.err) && ctx.Err() != nil && !errors.Is(pend.err, ctx.Err()) {
		return fmt.Errorf("%w: %w", pend.err, ctx.Err())
	}
	return pend.err
}

// giveBack releases the lease for Close, bounded by releaseTimeout; a later Release learns how it
// ended.
func (le *Lease) giveBack() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := le.Release(ctx)
	le.byClose.Store(&err)
}

// ReleaseAfter executes p, a pipeline of the holder's last commands (its writes) on the lock's own
// Redis server, and then releases the lock, as p.Exec followed by Release would, but in one round
// trip where the lock allows it: for NewLua, NewFenced, NewReentrant and NewFair on a client that
// sends a pipeline on one connection (not a Cluster or Ring client), the release joins the end of
// p, so Redis runs the commands before it and a waiter gets the lock one round trip sooner (a
// release script Redis has forgotten is sent again on its own, after them). The locks on several
// masters, and those clients, execute p and then release. Queue scripts in p with Script.Eval,
// not EvalSha: one Redis does not know fails in p, and sending it again would run it after the
// release. The commands' results are in the commands p returned as they were queued, complete
// when ReleaseAfter returns: it sends p and the release in the caller's goroutine, so it returns
// when they are answered (or the client's timeouts end them), not when ctx ends. The error is the
// release's, as Release's, and so is what a failure leaves: a lease released already gets p
// executed and ErrNotHeld, and a release that got no answer is sent again in the background,
// without p, as Release's is. With ctx ended before the call, p is not executed and the lease is
// released as Release would.
func (le *Lease) ReleaseAfter(ctx context.Context, p redis.Pipeliner) error {
	if le.locker == nil {
		execHeld(ctx, p)
		return fmt.Errorf("lock: release %s: %w", le.Key(), errPart)
	}
	le.mu.Lock()
	busy := le.pending != nil
	le.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return le.Release(ctx) // nothing of p is sent for a caller that has gone
	case p == nil || busy:
		execHeld(ctx, p) // a release under way already: p goes alone
		return le.Release(ctx)
	}
	le.end()
	// In the caller's goroutine, unlike Release: a sale's last round trip spawns nothing.
	err := le.impl.releaseAfter(ctx, p)
	if !answered(err) {
		le.mu.Lock()
		if le.pending == nil {
			le.settle(context.WithoutCancel(ctx), true)
		}
		le.mu.Unlock()
	}
	return err
}

// pendingRelease is a release under way: err is set before done closes. A release running in its
// caller's goroutine makes done only when a second caller waits on it (le.mu held); one that ended
// with nobody waiting has closedChan.
type pendingRelease struct {
	done  chan struct{}
	err   error
	bound sendBound // each send's context (resendOn)
}

// settle releases the lease in a goroutine of its own (le.pending, set with le.mu held), sending
// the release again by the give-back policy (resend) while the server does not answer, until it
// gets through, is refused (ErrNotHeld), or the lock would have expired anyway (a lease from the
// first failure: the watchdog stopped at the first call); after a first send that got no answer
// (again), it waits releaseRetry first. So a holder whose release met a frozen or restarting
// Redis frees the lock as soon as Redis answers again, not a lease later.
func (le *Lease) settle(ctx context.Context, again bool) *pendingRelease {
	pend := &pendingRelease{done: make(chan struct{})}
	le.pending = pend
	le.locker.crew.run(func() { le.settleHere(ctx, pend, again) })
	return pend
}

// settleHere is settle's release, in the caller's goroutine: pend ends with it.
func (le *Lease) settleHere(ctx context.Context, pend *pendingRelease, again bool) {
	defer le.finish(pend)
	giveUp := time.Now().Add(le.ttl)
	if again && !sleep(ctx, releaseRetry) {
		return
	}
	pend.bound.Context = ctx
	pend.err = resendOn(&pend.bound, giveUp, func(ctx context.Context) error { return le.impl.releaseAfter(ctx, nil) })
}

// finish ends pend: its done closes, or becomes closedChan when nobody made it.
func (le *Lease) finish(pend *pendingRelease) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if pend.done == nil {
		pend.done = closedChan
		return
	}
	close(pend.done)
}

// Refresh extends the lock by its lease from now, as the watchdog does: for a lease without a
// watchdog (NewLua, or Options.ExplicitLease) it is how a holder keeps a lock through long work.
// It is ErrNotHeld when the lock is no longer this lease's (it expired, or was released) and
// ErrUnavailable when Redis did not answer.
func (le *Lease) Refresh(ctx context.Context) error {
	if le.locker == nil {
		return fmt.Errorf("lock: refresh %s: %w", le.Key(), errPart)
	}
	return le.impl.refresh(ctx)
}

// Renewals counts the watchdog's successful renewals so far (0 without a watchdog).
func (le *Lease) Renewals() int64 {
	if r, ok := le.impl.(renewer); ok {
		return r.Renewals()
	}
	return 0
}

// Field is the hash field this lease holds in Redisson's layout ("<instance-id>:<owner>"), for
// NewReentrant, NewFair and NewFenced in RFencedLock's layout; "" for the others.
func (le *Lease) Field() string {
	if h, ok := le.impl.(hashLease); ok {
		return h.Field()
	}
	return ""
}

// Parts lists a multilock's lease on each master, in master order, to read (Key, Field, Token,
// Renewals, Lost); nil for the other locks. A part is given back with the whole lease: its own
// Release, ReleaseAfter and Refresh refuse, and free nothing.
func (le *Lease) Parts() []*Lease {
	p, ok := le.impl.(partsLease)
	if !ok {
		return nil
	}
	var out []*Lease
	for _, h := range p.Parts() {
		out = append(out, &Lease{impl: h})
	}
	return out
}
