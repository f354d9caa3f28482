package lock

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// handoff holds the queues of one Locker: the in-process waiting of every kind but fair, whose
// waiters all queue in Redis. What a kind adds is in how it tries (the try func of obtain) and
// what it listens to (listen): lua and fenced add the hand-over from the line in Redis (line.go),
// reentrant its nominations (nomination.go). The rules of waiting are in waiting.go: rules 3–8
// apply here (with 9–12, kept with pubsub.go).
type handoff struct {
	// listen subscribes to the release messages of key: ring is called for every release
	// heard. ready closes once the subscription is confirmed; stop ends it. nil: this mode hears
	// only its own releases.
	listen func(key string, ring func()) (ready <-chan struct{}, stop func())
	// poll is the fallback wait after a failed attempt when the holder's TTL is unknown; nil
	// means wait for a ring (or the end of the wait).
	poll func() time.Duration
	// linger keeps an empty queue (and its subscription) for a while, so a crowd that thins out
	// for a moment does not resubscribe on every sale.
	linger time.Duration
	// localRing: the mode rings the queue itself on every release made in this process (lua and
	// fenced; redlock, whose subscriber ignores this process's own messages), so a holder here is
	// sure to ring even before the queue's subscription is confirmed.
	localRing bool

	mu     sync.Mutex
	queues map[string]*queue
}

// queue is one key's waiters in one process. Fields without a comment are guarded by handoff.mu.
type queue struct {
	key     string
	waiters []*place // in arrival order; waiters[0] is the head, the only one contending in Redis
	// rings counts the releases heard; the head compares it with what it saw before its last
	// attempt, so a ring is never lost (counted even when nobody is waiting on bell) and a ring
	// older than the attempt never wakes it for nothing.
	rings atomic.Uint64
	bell  chan struct{} // capacity 1: wakes the head to look at rings

	// hint is left by a head that got the lock for the next head: the lock is taken (by a holder
	// in this process, whose release will ring) and expires at the latest at hintUntil, so the next
	// head need not try before a ring or that time.
	hint      bool
	hintSeen  uint64
	hintUntil time.Time

	listening bool
	ready     <-chan struct{}
	stop      func()
	idle      *time.Timer // pending teardown of an empty queue
}

// place is one waiter's spot in a queue.
type place struct {
	turn     chan struct{} // closed when it becomes the head
	deadline time.Time     // the end of its wait
	who      string        // the waiter's name for the kind ("" but for lua and fenced: its value)
}

func newHandoff(listen func(string, func()) (<-chan struct{}, func()), poll func() time.Duration) *handoff {
	return &handoff{listen: listen, poll: poll, linger: time.Second, queues: map[string]*queue{}}
}

// ring records a release of key made by this process.
func (h *handoff) ring(key string) {
	h.mu.Lock()
	q := h.queues[key]
	h.mu.Unlock()
	if q != nil {
		q.ring()
	}
}

func (q *queue) ring() {
	q.rings.Add(1)
	select {
	case q.bell <- struct{}{}:
	default: // the head has a wake-up pending already; it reads rings, not the bell
	}
}

// acquire waits for its turn in key's queue, then runs try until it holds the lock, the wait runs
// out (ErrNotObtained) or ctx ends (ErrNotObtained wrapping ctx.Err()). try returns held, or
// the current holder's remaining TTL (< 0: unknown). lease is how long a won lock lives at most
// (the next head's fallback). An error from try ends the acquisition with that error, unless
// brokenRetry has it made again.
func (h *handoff) acquire(ctx context.Context, key, who string, wait, lease time.Duration,
	try func(context.Context) (bool, time.Duration, error)) error {
	deadline := time.Now().Add(wait)
	q, p := h.enter(key, who, deadline)
	won := false
	var seen uint64
	var until time.Time
	defer func() { h.exit(q, p, won, seen, until) }()

	if !waitTurn(ctx, p, deadline) {
		return notObtained(ctx, key)
	}
	var wake time.Time
	hinted := false
	var retry brokenRetry
	seen, wake, hinted = h.takeHint(q)
	for {
		if !hinted {
			seen = q.rings.Load()
			sent := time.Now()
			held, ttl, err := try(ctx)
			if err != nil {
				if retry.again(ctx, err, deadline) {
					continue
				}
				return err
			}
			retry.answered()
			if held {
				won, until = true, sent.Add(lease)
				return nil
			}
			if h.subscribe(ctx, q, deadline) {
				// Just subscribed: a release between the attempt and the subscription
				// would not ring, so look again now that any later one will.
				continue
			}
			switch {
			case ttl >= 0:
				wake = time.Now().Add(max(ttl, time.Millisecond))
			case h.poll != nil:
				wake = time.Now().Add(h.poll())
			default:
				wake = deadline
			}
		}
		hinted = false
		left := time.Until(deadline)
		if left <= 0 {
			return notObtained(ctx, key)
		}
		if !q.sleep(ctx, seen, min(time.Until(wake), left)) {
			return notObtained(ctx, key)
		}
	}
}

// obtain runs the rules every waiting mode shares around acquire: a zero wait is one attempt, and
// so is an attempt the mode wants made at once (direct: an owner re-entering a lock it holds must
// not queue behind the waiters for it); otherwise the key's queue, in which the waiter is who
// (headOf). An error that comes while ctx is ending is ErrNotObtained wrapping ctx.Err(), not
// Redis trouble.
func (h *handoff) obtain(ctx context.Context, key, who string, wait, lease time.Duration, direct bool,
	try func(context.Context) (bool, time.Duration, error)) error {
	if wait <= 0 || direct {
		held, _, err := try(ctx)
		switch {
		case err != nil:
			return obtainErr(ctx, key, err)
		case held:
			return nil
		case wait <= 0:
			return notObtained(ctx, key)
		}
	}
	return obtainErr(ctx, key, h.acquire(ctx, key, who, wait, lease, try))
}

func obtainErr(ctx context.Context, key string, err error) error {
	if err != nil && !errors.Is(err, ErrNotObtained) && ctx.Err() != nil {
		return notObtained(ctx, key)
	}
	return err
}

// newSubscribedQueue builds the queue of a mode whose releases PUBLISH Redisson's unlock message
// on the key's unlock channel (unlockChannel): one subscriber on rdb and a handoff whose queues
// join it per key.
func newSubscribedQueue(rdb redis.UniversalClient, log *slog.Logger) (*subscriber, *handoff) {
	sub := newSubscriber(rdb, log, unlockOnly)
	queue := newHandoff(func(key string, ring func()) (<-chan struct{}, func()) {
		h := sub.join(context.Background(), unlockChannel(key), ring)
		return h.ready, func() { sub.leave(h) }
	}, nil)
	return sub, queue
}

// enter joins key's queue as who until deadline; the first in an empty queue is its head at once.
func (h *handoff) enter(key, who string, deadline time.Time) (*queue, *place) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil {
		q = &queue{key: key, bell: make(chan struct{}, 1)}
		h.queues[key] = q
	}
	if q.idle != nil {
		q.idle.Stop()
		q.idle = nil
	}
	p := &place{turn: make(chan struct{}), deadline: deadline, who: who}
	q.waiters = append(q.waiters, p)
	if len(q.waiters) == 1 {
		close(p.turn)
	}
	return q, p
}

// headOf is who the head of key's queue is; false when nobody waits.
func (h *handoff) headOf(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; q != nil && len(q.waiters) > 0 {
		return q.waiters[0].who, true
	}
	return "", false
}

// ringAll rings every queue: releases may have gone unheard.
func (h *handoff) ringAll() {
	h.mu.Lock()
	queues := make([]*queue, 0, len(h.queues))
	for _, q := range h.queues {
		queues = append(queues, q)
	}
	h.mu.Unlock()
	for _, q := range queues {
		q.ring()
	}
}

// lastDeadline is when the last of key's waiters here stops waiting; zero when none is waiting.
func (h *handoff) lastDeadline(key string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var last time.Time
	if q := h.queues[key]; q != nil {
		for _, p := range q.waiters {
			if p.deadline.After(last) {
				last = p.deadline
			}
		}
	}
	return last
}

// waitTurn waits until p is the head of its queue; false when the wait or ctx ran out first.
func waitTurn(ctx context.Context, p *place, deadline time.Time) bool {
	select {
	case <-p.turn:
		return true
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-p.turn:
		return true
	case <-t.C:
		// The turn may have come at the same moment; taking it is as good as not.
		select {
		case <-p.turn:
			return true
		default:
			return false
		}
	case <-ctx.Done():
		return false
	}
}

// takeHint returns the hint the previous head left, if it is usable: only when the holder's
// release is sure to ring, i.e. the mode rings its own releases, or the queue's subscription is
// confirmed.
func (h *handoff) takeHint(q *queue) (seen uint64, until time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !q.hint {
		return 0, time.Time{}, false
	}
	q.hint = false
	if !h.localRing && h.listen != nil {
		if !q.listening || q.ready == nil || !isDone(q.ready) {
			return 0, time.Time{}, false
		}
	}
	return q.hintSeen, q.hintUntil, true
}

// subscribe makes sure the queue hears releases from other processes; it reports true when it
// has just subscribed (and waited, within the deadline, for Redis to confirm).
func (h *handoff) subscribe(ctx context.Context, q *queue, deadline time.Time) bool {
	if h.listen == nil {
		return false
	}
	h.mu.Lock()
	if q.listening {
		h.mu.Unlock()
		return false
	}
	q.listening = true
	h.mu.Unlock()
	// Outside the lock: it talks to Redis. Only the head gets here, and the queue cannot be torn
	// down while it is in it.
	ready, stop := h.listen(q.key, q.ring)
	h.mu.Lock()
	q.ready, q.stop = ready, stop
	h.mu.Unlock()
	// A subscription slow to confirm costs latency, not correctness: wait a bounded time.
	t := time.NewTimer(min(time.Until(deadline), 250*time.Millisecond))
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
	return true
}

// exit leaves the queue. A head that leaves hands the turn to the next waiter, with a hint when
// it got the lock. An empty queue is torn down (and unsubscribed) after linger.
func (h *handoff) exit(q *queue, p *place, won bool, seen uint64, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	head := q.waiters[0] == p
	q.waiters = slices.DeleteFunc(q.waiters, func(w *place) bool { return w == p })
	if head {
		// The next head reads the hint under h.mu, so after this.
		q.hint, q.hintSeen, q.hintUntil = won, seen, until
		if len(q.waiters) > 0 {
			close(q.waiters[0].turn)
		}
	}
	if len(q.waiters) > 0 {
		return
	}
	if !q.listening {
		if h.queues[q.key] == q {
			delete(h.queues, q.key)
		}
		return
	}
	var t *time.Timer
	t = time.AfterFunc(h.linger, func() {
		h.mu.Lock()
		if q.idle != t || len(q.waiters) > 0 {
			h.mu.Unlock()
			return // someone came back meanwhile
		}
		q.idle = nil
		if h.queues[q.key] == q {
			delete(h.queues, q.key)
		}
		stop := q.stop
		h.mu.Unlock()
		// Outside the lock: unsubscribing talks to Redis, which may be slow or down.
		if stop != nil {
			stop()
		}
	})
	q.idle = t
}

// sleep waits until a ring newer than seen, d, or the end of ctx; false only when ctx ended.
func (q *queue) sleep(ctx context.Context, seen uint64, d time.Duration) bool {
	if q.rings.Load() != seen {
		return true
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for q.rings.Load() == seen {
		select {
		case <-q.bell:
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// close tears down every idle queue and its subscription now instead of after linger (the Locker
// is closing); a queue whose waiters are still leaving is torn down by the last of them.
func (h *handoff) close() {
	h.mu.Lock()
	var stops []func()
	for key, q := range h.queues {
		if len(q.waiters) > 0 {
			continue
		}
		if q.idle != nil {
			q.idle.Stop()
			q.idle = nil
		}
		delete(h.queues, key)
		if q.stop != nil {
			stops = append(stops, q.stop)
		}
	}
	h.mu.Unlock()
	// Outside the lock: unsubscribing talks to Redis, which may be slow or down.
	for _, stop := range stops {
		stop()
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
