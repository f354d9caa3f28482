package core

import (
	"slices"
	"time"
)

// QueueConfig is what a kind says about its in-process queue.
type QueueConfig struct {
	// Listens: the queue subscribes to the key's releases after its head's first failed attempt.
	Listens bool
	// SureRing: every release the head must hear rings the queue even before its subscription is
	// confirmed (the kind rings its own releases, or it listens to nothing), so the hint a
	// winner leaves is usable at once.
	SureRing bool
	// Linger is how long an empty queue keeps its subscription, so a crowd that thins out for a
	// moment does not resubscribe on every sale.
	Linger time.Duration
	// ConfirmWait is how long a head that has just subscribed waits for the confirmation before
	// it looks again anyway (a slow confirmation costs latency, not correctness).
	ConfirmWait time.Duration
}

// Queue is one key's waiters in one process (a Locker), the in-process waiting of every kind but
// fair. The waiters are served in arrival order and only the head contends in Redis. A release
// rings the queue, and a ring wakes the head alone. The queue counts rings, and the head compares
// the count with the one it saw before its last attempt, so no ring is lost and no old ring wakes
// it for nothing. A head's sleep is bounded by what its last attempt said (the holder's TTL, a
// poll) and by its deadline. After its first failed attempt the head subscribes and looks once
// more once the subscription is confirmed, since a release before then was not heard (an attempt
// that began before the confirmation does not count: it looks once more after it). A head
// that won leaves a hint for the next: the lock is held here until at most a moment, and its
// release will ring. A waiter whose wait is over is passed over wherever it stands.
//
// The caller numbers the waiters, gives every event its time, and does what each QueueReady says.
type Queue struct {
	cfg     QueueConfig
	waiters []queued // in arrival order; waiters[0] is the head
	rings   uint64
	head    headState
	hint    hint
	sub     subState
	idle    time.Time // when the queue became empty with a subscription (zero: it is not)
}

type queued struct {
	id       uint64
	deadline time.Time
}

type phase int

const (
	fresh      phase = iota // the head has not been started
	trying                  // its attempt is in flight
	sleeping                // until a ring newer than seen, or wake
	confirming              // it has just subscribed: until the confirmation, or wake
)

type headState struct {
	phase phase
	seen  uint64    // the rings counted before its last attempt (or the hint's)
	wake  time.Time // zero: no timer of its own
	heard bool      // its last attempt began with the subscription confirmed
}

// hint is what a head that leaves tells the next: won, the rings it saw before its winning
// attempt and until when the lock is held here at most.
type hint struct {
	won   bool
	seen  uint64
	until time.Time
}

type subState int

const (
	subNone subState = iota
	subAsked
	subConfirmed
)

// QueueReady is what the caller must do after an event.
type QueueReady struct {
	// Try: the waiter with this id (the head) makes an attempt now and reports Held or Failed
	// (0: none).
	Try uint64
	// GiveUp: these waiters' waits are over without the lock; they are out of the queue.
	GiveUp []uint64
	// Subscribe: listen to the key's releases (ring on each) and report Confirmed.
	Subscribe bool
	// Unsubscribe: the queue lingered empty long enough; stop listening.
	Unsubscribe bool
	// Drop: the queue is empty and listens to nothing: the caller may forget it.
	Drop bool
	// Wake: call Tick at this moment (zero: no timer is needed).
	Wake time.Time
}

// NewQueue makes an empty queue (a value: the caller keeps it where it likes).
func NewQueue(cfg QueueConfig) Queue { return Queue{cfg: cfg} }

// Enter adds waiter id, whose wait ends at deadline, at the tail; the first in an empty queue
// is its head at once.
func (q *Queue) Enter(now time.Time, id uint64, deadline time.Time) QueueReady {
	q.idle = time.Time{}
	q.waiters = append(q.waiters, queued{id: id, deadline: deadline})
	return q.step(now, QueueReady{})
}

// Held: the head's attempt won the lock, held here until at most until. It leaves the queue,
// with a hint for the next head.
func (q *Queue) Held(now time.Time, id uint64, until time.Time) QueueReady {
	if !q.trying(id) {
		return q.step(now, QueueReady{})
	}
	q.remove(now, 0, hint{won: true, seen: q.head.seen, until: until})
	return q.step(now, QueueReady{})
}

// Failed: the head's attempt did not win; what it read says to look again after retry at the
// latest (< 0: only when rung, or at its deadline). After a first failure the queue subscribes.
func (q *Queue) Failed(now time.Time, id uint64, retry time.Duration) QueueReady {
	var r QueueReady
	if !q.trying(id) {
		return q.step(now, r)
	}
	if q.cfg.Listens && q.sub == subNone {
		q.sub, r.Subscribe = subAsked, true
		q.head = headState{phase: confirming, wake: now.Add(q.cfg.ConfirmWait)}
		return q.step(now, r)
	}
	if q.sub == subConfirmed && !q.head.heard && !mutated(NoLookAfterSubscribe) {
		// The attempt began before the confirmation: a release between the two was not heard.
		q.head = headState{phase: confirming}
		return q.step(now, r)
	}
	q.head.phase, q.head.wake = sleeping, time.Time{}
	if retry >= 0 && !mutated(NoRelook) {
		q.head.wake = now.Add(max(retry, time.Millisecond))
	}
	return q.step(now, r)
}

// Leave takes waiter id out of the queue (its caller has gone), wherever it stands.
func (q *Queue) Leave(now time.Time, id uint64) QueueReady {
	if i := q.index(id); i >= 0 {
		q.remove(now, i, hint{})
	}
	return q.step(now, QueueReady{})
}

// Ring: a release of the key was heard (or made here).
func (q *Queue) Ring(now time.Time) QueueReady {
	if !mutated(NoWake) {
		q.rings++
	}
	return q.step(now, QueueReady{})
}

// InLine: a release made here put the process in the line kept in Redis for its waiters (the
// reentrant line, N3), so no ring comes from it: the next ring is a nomination, which a broken
// subscription can lose. A head asleep on the hint its holder left (a lease) looks again within
// bound at the latest.
func (q *Queue) InLine(now time.Time, bound time.Duration) QueueReady {
	if h := &q.head; len(q.waiters) > 0 && h.phase == sleeping && !mutated(NoInLineBound) {
		if w := now.Add(bound); h.wake.IsZero() || w.Before(h.wake) {
			h.wake = w
		}
	}
	return q.step(now, QueueReady{})
}

// Confirmed: the subscription is confirmed; a head that has just subscribed looks again.
func (q *Queue) Confirmed(now time.Time) QueueReady {
	h := &q.head
	if q.sub == subAsked {
		q.sub = subConfirmed
		if h.phase == sleeping {
			h.phase = confirming // it looked meanwhile, but a release since was not heard
		}
	}
	if mutated(NoLookAfterSubscribe) && h.phase == confirming {
		h.phase, h.seen = sleeping, q.rings // it waits for a ring, which went by before it listened
	}
	return q.step(now, QueueReady{})
}

// Tick is the timer's event.
func (q *Queue) Tick(now time.Time) QueueReady { return q.step(now, QueueReady{}) }

// Head is the waiter at the head (false: nobody waits).
func (q *Queue) Head() (uint64, bool) {
	if len(q.waiters) == 0 {
		return 0, false
	}
	return q.waiters[0].id, true
}

// LastDeadline is when the last waiter's wait ends (zero: nobody waits).
func (q *Queue) LastDeadline() time.Time {
	var last time.Time
	for _, w := range q.waiters {
		if w.deadline.After(last) {
			last = w.deadline
		}
	}
	return last
}

// Empty reports whether nobody waits.
func (q *Queue) Empty() bool { return len(q.waiters) == 0 }

// Clone is a copy that shares nothing with q.
func (q *Queue) Clone() Queue {
	c := *q
	c.waiters = slices.Clone(q.waiters)
	return c
}

func (q *Queue) index(id uint64) int {
	return slices.IndexFunc(q.waiters, func(w queued) bool { return w.id == id })
}

func (q *Queue) trying(id uint64) bool {
	return len(q.waiters) > 0 && q.waiters[0].id == id && q.head.phase == trying
}

// remove takes out the waiter at i; a head that leaves passes the turn on with h.
func (q *Queue) remove(now time.Time, i int, h hint) {
	q.waiters = slices.Delete(q.waiters, i, i+1)
	if i == 0 {
		q.head, q.hint = headState{}, h
	}
	if len(q.waiters) == 0 && q.sub != subNone {
		q.idle = now
	}
}

// step decides what follows an event: the waits that are over end, a new head starts its turn,
// the head looks again when rung or when its timer is due, an idle queue unsubscribes.
func (q *Queue) step(now time.Time, r QueueReady) QueueReady {
	for i := q.expired(now); i >= 0; i = q.expired(now) {
		r.GiveUp = append(r.GiveUp, q.waiters[i].id)
		q.remove(now, i, hint{})
	}
	if len(q.waiters) > 0 {
		q.startHead()
		h := &q.head
		due := !h.wake.IsZero() && !now.Before(h.wake)
		if (h.phase == sleeping && (q.rings != h.seen || due)) || (h.phase == confirming && (q.sub == subConfirmed || due)) {
			h.phase, h.seen, h.wake, h.heard = trying, q.rings, time.Time{}, q.sub == subConfirmed
			r.Try = q.waiters[0].id
		}
	} else if q.sub == subNone {
		r.Drop = true
	} else if !now.Before(q.idle.Add(q.cfg.Linger)) {
		q.sub, q.idle = subNone, time.Time{}
		r.Unsubscribe, r.Drop = true, true
	}
	r.Wake = q.wake()
	return r
}

// startHead starts a fresh head's turn: asleep on the hint the last head left when its release is
// sure to ring, else due to try now.
func (q *Queue) startHead() {
	if q.head.phase != fresh {
		return
	}
	h := q.hint
	q.hint = hint{}
	q.head = headState{phase: sleeping, seen: q.rings + 1} // seen differs from rings: try now
	if h.won && (q.cfg.SureRing || q.sub == subConfirmed) {
		q.head = headState{phase: sleeping, seen: h.seen, wake: h.until}
	}
}

// expired is the index of a waiter whose wait is over, but for a head whose attempt is in flight
// (it learns its answer first); -1 when none is.
func (q *Queue) expired(now time.Time) int {
	for i, w := range q.waiters {
		if !now.Before(w.deadline) && !(i == 0 && q.head.phase == trying) {
			return i
		}
	}
	return -1
}

// wake is the next moment something is due: the head's timer, a wait's end, an idle queue's
// linger.
func (q *Queue) wake() time.Time {
	var t time.Time
	soonest := func(x time.Time) {
		if !x.IsZero() && (t.IsZero() || x.Before(t)) {
			t = x
		}
	}
	for i, w := range q.waiters {
		if !(i == 0 && q.head.phase == trying) && !mutated(NoDeadlineTimer) {
			soonest(w.deadline)
		}
	}
	if len(q.waiters) > 0 && q.head.phase != trying {
		soonest(q.head.wake)
	}
	if len(q.waiters) == 0 && !q.idle.IsZero() {
		soonest(q.idle.Add(q.cfg.Linger))
	}
	return t
}
