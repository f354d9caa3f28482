package lock

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// handoff drives the queues of one Locker: the in-process waiting of every kind but fair, whose
// waiters all queue in Redis. Every decision (who is the head, when it tries, when it sleeps and
// until when, when the queue subscribes, when a wait is over, when an idle queue lets go of its
// subscription) is lock/core's Queue; handoff feeds it events (a waiter comes or goes, an attempt's
// answer, a release heard, a subscription confirmed, a timer) and does what it answers, with one
// timer per queue. A waiter's own goroutine makes its attempts. What a kind adds is in how it tries
// (the try func of obtain) and what it listens to (listen): lua and fenced add the hand-over from
// the line in Redis (line.go), reentrant its nominations (nomination.go). It keeps waiting.go's
// rules 3–5 (and 6 with pubsub.go).
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
	ids    uint64 // the last waiter's number
}

// queue is one key's waiters in one process: the core's queue and what the driver keeps beside it.
// Fields are guarded by handoff.mu.
type queue struct {
	key    string
	core   core.Queue
	places []*place
	timer  *time.Timer // the core's Tick (nil until it first asks for one)
	stop   func()      // ends the subscription (nil: none, or not yet returned by listen)
	// gone: the queue is forgotten; dropped is closed then, once a subscription waits on it.
	gone    bool
	dropped chan struct{}
}

// place is the waiter with id (nil: it has left).
func (q *queue) place(id uint64) *place {
	for _, p := range q.places {
		if p.id == id {
			return p
		}
	}
	return nil
}

// forget stops telling the waiter with id anything.
func (q *queue) forget(id uint64) {
	q.places = slices.DeleteFunc(q.places, func(p *place) bool { return p.id == id })
}

// place is one waiter's spot in a queue: the core tells it, on turn, to try or that its wait is
// over.
type place struct {
	id   uint64
	who  string // the waiter's name for the kind ("" but for lua and fenced: its value)
	turn chan bool
}

func newHandoff(listen func(string, func()) (<-chan struct{}, func()), poll func() time.Duration, localRing bool) *handoff {
	return &handoff{listen: listen, poll: poll, localRing: localRing, linger: core.Linger, queues: map[string]*queue{}}
}

// ring records a release of key made by this process.
func (h *handoff) ring(key string) { h.stepKey(key, (*core.Queue).Ring) }

// inLine records that a release made here kept this process in key's line in Redis for its
// waiters: its head looks again within bound (core.Queue.InLine).
func (h *handoff) inLine(key string, bound time.Duration) {
	h.stepKey(key, func(c *core.Queue, now time.Time) core.QueueReady { return c.InLine(now, bound) })
}

// stepKey gives key's queue, if there is one, an event (step).
func (h *handoff) stepKey(key string, event func(*core.Queue, time.Time) core.QueueReady) {
	h.mu.Lock()
	var post afterStep
	if q := h.queues[key]; q != nil {
		post = h.stepLocked(q, event)
	}
	h.mu.Unlock()
	h.after(post)
}

// step gives q's core an event and does what it answers (stepLocked).
func (h *handoff) step(q *queue, event func(*core.Queue, time.Time) core.QueueReady) {
	h.mu.Lock()
	post := h.stepLocked(q, event)
	h.mu.Unlock()
	h.after(post)
}

// afterStep is what a step leaves to do once h.mu is released.
type afterStep struct {
	q           *queue
	subscribe   bool
	unsubscribe func()
}

// after does it: subscribing and unsubscribing talk to Redis.
func (h *handoff) after(a afterStep) {
	if a.subscribe {
		h.subscribe(a.q)
	}
	if a.unsubscribe != nil {
		a.unsubscribe()
	}
}

// stepLocked gives q's core an event, h.mu held, and does what it answers: it tells waiters to try
// or that their wait is over, arms the timer and forgets a dropped queue. What talks to Redis
// (subscribing, unsubscribing) is returned, to be done once h.mu is released. A queue already
// forgotten hears nothing more (a late ring, a timer).
func (h *handoff) stepLocked(q *queue, event func(*core.Queue, time.Time) core.QueueReady) afterStep {
	if q.gone {
		return afterStep{}
	}
	r := event(&q.core, time.Now())
	if p := q.place(r.Try); p != nil {
		p.turn <- true
	}
	for _, id := range r.GiveUp {
		if p := q.place(id); p != nil {
			q.forget(id)
			p.turn <- false
		}
	}
	switch {
	case r.Drop:
		if h.queues[q.key] == q {
			delete(h.queues, q.key)
		}
		q.drop()
	case !r.Wake.IsZero() && q.timer == nil:
		q.timer = time.AfterFunc(time.Until(r.Wake), func() { h.step(q, (*core.Queue).Tick) })
	case !r.Wake.IsZero():
		q.timer.Reset(time.Until(r.Wake))
	}
	a := afterStep{q: q, subscribe: r.Subscribe}
	if r.Unsubscribe {
		a.unsubscribe, q.stop = q.stop, nil
	}
	return a
}

// drop marks q forgotten (h.mu held).
func (q *queue) drop() {
	q.gone = true
	if q.timer != nil {
		q.timer.Stop()
	}
	if q.dropped != nil {
		close(q.dropped)
	}
}

// subscribe listens to q's key and tells the core when Redis confirms.
func (h *handoff) subscribe(q *queue) {
	ready, stop := h.listen(q.key, func() { h.step(q, (*core.Queue).Ring) })
	h.mu.Lock()
	gone := q.gone
	if !gone {
		q.stop = stop
		if q.dropped == nil {
			q.dropped = make(chan struct{})
		}
	}
	dropped := q.dropped
	h.mu.Unlock()
	if gone {
		stop() // the queue was forgotten while listen ran
		return
	}
	go func() {
		select {
		case <-ready:
			h.step(q, (*core.Queue).Confirmed)
		case <-dropped:
		}
	}()
}

// acquire waits for its turn in key's queue, then runs try until it holds the lock, the wait runs
// out (ErrNotObtained) or ctx ends (ErrNotObtained wrapping ctx.Err()). try returns held, or
// the current holder's remaining TTL (< 0: unknown). lease is how long a won lock lives at most
// (the next head's hint). An error from try ends the acquisition with that error, unless
// brokenRetry has it made again.
func (h *handoff) acquire(ctx context.Context, key, who string, wait, lease time.Duration,
	try func(context.Context) (bool, time.Duration, error)) error {
	deadline := time.Now().Add(wait)
	q, p := h.enter(key, who, deadline)
	var retry brokenRetry
	for {
		select {
		case <-ctx.Done():
			h.leave(q, p)
			return notObtained(ctx, key)
		case tryNow := <-p.turn:
			if !tryNow {
				return notObtained(ctx, key)
			}
		}
		sent := time.Now()
		held, ttl, err := try(ctx)
		for err != nil && retry.again(ctx, err, deadline) {
			sent = time.Now()
			held, ttl, err = try(ctx)
		}
		switch {
		case err != nil:
			h.leave(q, p)
			return err
		case held:
			h.quit(q, p, func(c *core.Queue, now time.Time) core.QueueReady { return c.Held(now, p.id, sent.Add(lease)) })
			return nil
		}
		retry.answered()
		if ttl < 0 && h.poll != nil {
			ttl = h.poll()
		}
		h.step(q, func(c *core.Queue, now time.Time) core.QueueReady { return c.Failed(now, p.id, ttl) })
	}
}

// enter joins key's queue as who until deadline.
func (h *handoff) enter(key, who string, deadline time.Time) (*queue, *place) {
	h.mu.Lock()
	q := h.queues[key]
	if q == nil {
		q = &queue{key: key, core: core.NewQueue(core.QueueConfig{Listens: h.listen != nil,
			SureRing: h.localRing || h.listen == nil, Linger: h.linger, ConfirmWait: core.ConfirmWait})}
		h.queues[key] = q
	}
	h.ids++
	p := &place{id: h.ids, who: who, turn: make(chan bool, 1)}
	q.places = append(q.places, p)
	post := h.stepLocked(q, func(c *core.Queue, now time.Time) core.QueueReady { return c.Enter(now, p.id, deadline) })
	h.mu.Unlock()
	h.after(post)
	return q, p
}

// leave takes p out of its queue (its caller has gone, or its attempt failed for good).
func (h *handoff) leave(q *queue, p *place) {
	h.quit(q, p, func(c *core.Queue, now time.Time) core.QueueReady { return c.Leave(now, p.id) })
}

// quit stops telling p anything and gives the core the event of its going, under one lock.
func (h *handoff) quit(q *queue, p *place, event func(*core.Queue, time.Time) core.QueueReady) {
	h.mu.Lock()
	q.forget(p.id)
	post := h.stepLocked(q, event)
	h.mu.Unlock()
	h.after(post)
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

// newChannelQueue builds the queue of a Hold, whose releases PUBLISH on one channel per key
// (h.Channel): one subscriber on rdb, which rings for the messages h.Rings takes, and a handoff
// whose queues join it per key. Every message taken rings the key's queue (a join).
func newChannelQueue(rdb redis.UniversalClient, log *slog.Logger, mode *pubsubMode, h core.Hold) (*subscriber, *handoff) {
	sub := newSubscriber(rdb, log, mode, h.Rings)
	queue := newHandoff(func(key string, ring func()) (<-chan struct{}, func()) {
		l := sub.listen(context.Background(), h.Channel(key), false, func(string, string) { ring() })
		return l.ready, func() { sub.leave(l) }
	}, nil, false)
	return sub, queue
}

// headOf is who the head of key's queue is; false when nobody waits.
func (h *handoff) headOf(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; q != nil {
		if id, ok := q.core.Head(); ok && q.place(id) != nil {
			return q.place(id).who, true
		}
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
		h.step(q, (*core.Queue).Ring)
	}
}

// lastDeadline is when the last of key's waiters here stops waiting; zero when none is waiting.
func (h *handoff) lastDeadline(key string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; q != nil {
		return q.core.LastDeadline()
	}
	return time.Time{}
}

// close tears down every idle queue and its subscription now instead of after linger (the Locker
// is closing); a queue whose waiters are still leaving is torn down by the last of them.
func (h *handoff) close() {
	h.mu.Lock()
	var stops []func()
	for key, q := range h.queues {
		if !q.core.Empty() {
			continue
		}
		delete(h.queues, key)
		q.drop()
		if q.stop != nil {
			stops = append(stops, q.stop)
			q.stop = nil
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
