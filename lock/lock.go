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
//
// A Locker is shared and safe for concurrent use: every Acquire hands out a *Lease that carries
// its own token. Waiters are woken by the release (pub/sub, and in-process hand-over) instead of
// polling. Every lease can be renewed by hand (Lease.Refresh); the locks with a watchdog also renew
// on their own every lease/3 until Release, and close Lease.Lost when they cannot. One renewal
// policy holds for every lock: a renewal that fails on a transient error (no answer, a timeout)
// is retried while the lock is surely still held (until 0.9 × the lease since the last success);
// only then, or when Redis says the lock is someone else's, is the lease lost.
//
// Errors tell the cases apart with errors.Is: ErrNotObtained (the wait ran out; with
// ctx.Err() joined when the context ended first), ErrLost, ErrNotHeld, ErrUnavailable (a server
// did not answer), ErrNotReplicated.
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
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotObtained: the lock was not acquired within the wait (or the context ended first; then
	// the error also wraps ctx.Err()).
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld: a release or refresh by someone who does not hold the lock (any more), as in
	// Redisson's IllegalMonitorStateException.
	ErrNotHeld = errors.New("lock: not held by this owner")
	// ErrUnavailable: a Redis server needed by the lock did not answer (or no client was given).
	ErrUnavailable = errors.New("lock: redis unavailable")
	// ErrLost: the lock was lost while held (renewal failed or validity ran out).
	ErrLost = errors.New("lock: lost while held")
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
	// ignore it.
	Owner string
}

// Locker acquires one kind of lock. It is safe for concurrent use; build one per process and
// lock, and share it.
type Locker struct {
	impl locker
}

// Acquire blocks until the lock named key is held, opts.Wait has elapsed (ErrNotObtained) or
// ctx is done (ErrNotObtained joined with ctx.Err()). A Redis server that does not answer is
// ErrUnavailable.
func (l *Locker) Acquire(ctx context.Context, key string, opts Options) (*Lease, error) {
	if l == nil || l.impl == nil {
		return nil, fmt.Errorf("lock: acquire %s on a nil Locker: %w", key, ErrUnavailable)
	}
	h, err := l.impl.Acquire(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return &Lease{impl: h}, nil
}

// Close ends the Locker's own connections (the waiters' subscriptions) and its waiters' waits.
// Leases still held are not affected: their watchdogs keep them alive until they are released
// (or lost), so Close may come before the last Release.
func (l *Locker) Close() error {
	if l == nil || l.impl == nil {
		return nil
	}
	return l.impl.Close()
}

// Lease is one held lock.
type Lease struct {
	impl heldLock
}

// Key is the lock's key.
func (le *Lease) Key() string { return le.impl.Key() }

// Token is the fencing token of this acquisition: 0 for locks without fencing.
func (le *Lease) Token() int64 { return le.impl.Token() }

// Lost is closed when the holder learns that the lock is gone (the watchdog could not renew it,
// or Redlock's validity ran out). It is nil for a lease nothing watches (NewLua, or an explicit
// lease): such a holder must keep its work within the lease, or Refresh.
func (le *Lease) Lost() <-chan struct{} { return le.impl.Lost() }

// Release gives the lock back. Releasing twice, or a lock no longer held, is ErrNotHeld. A release
// that failed on a transient error (ErrUnavailable, or ctx ended: errors.Is tells both) may be
// called again; until it succeeds the lock expires on its own at the end of its lease.
func (le *Lease) Release(ctx context.Context) error { return le.impl.Release(ctx) }

// ReleaseAfter executes p, a pipeline of the holder's last commands (its writes) on the lock's own
// Redis server, and then releases the lock, as p.Exec followed by Release would, but in one round
// trip where the lock allows it: for NewLua, NewFenced, NewReentrant and NewFair on a client that
// sends a pipeline on one connection (not a Cluster or Ring client), the release joins the end of
// p, so Redis runs the commands before it and a waiter gets the lock one round trip sooner (a
// release script Redis has forgotten is sent again on its own, after them). The locks on several
// masters, and those clients, execute p and then release. Queue scripts in p with Script.Eval,
// not EvalSha: one Redis does not know fails in p, and sending it again would run it after the
// release. The commands' results are in the commands p returned as
// they were queued; the error is the release's, as Release's (a lease released already gets p
// executed and ErrNotHeld).
func (le *Lease) ReleaseAfter(ctx context.Context, p redis.Pipeliner) error {
	if pr, ok := le.impl.(pipelineReleaser); ok {
		return pr.releaseAfter(ctx, p)
	}
	execHeld(ctx, p)
	return le.impl.Release(ctx)
}

// Refresh extends the lock by its lease from now, as the watchdog does: for a lease without a
// watchdog (NewLua, or Options.ExplicitLease) it is how a holder keeps a lock through long work.
// It is ErrNotHeld when the lock is no longer this lease's (it expired, or was released) and
// ErrUnavailable when Redis did not answer.
func (le *Lease) Refresh(ctx context.Context) error { return le.impl.refresh(ctx) }

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

// Parts lists a multilock's lease on each master, in master order; nil for the other locks.
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
