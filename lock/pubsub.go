package lock

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock/script"
)

// unlockMessage is what a release publishes on the lock's channel (Redisson's
// LockPubSub.UNLOCK_MESSAGE, written by its LongCodec as "0").
const unlockMessage = script.UnlockMessage

// unlockChannel is the channel Redisson waiters listen on for lock name (script.UnlockChannel).
var unlockChannel = script.UnlockChannel

// subscriber is one Locker's pub/sub connection, shared by all its waiters (Redisson keeps one
// per client too): every kind wakes through it, lua and fenced on their process's grant channel
// (line.go). A channel is subscribed while a local queue of waiters needs it; every release
// message rings that queue, which wakes only its head, like a semaphore permit in Redisson's
// LockPubSub. It serves waiting.go's rule 6 (and pubsub_sharded.go's S1–S2).
type subscriber struct {
	rdb redis.UniversalClient
	log *slog.Logger
	// accept tells a release message from other traffic on the channel (and, for modes that wake
	// their own waiters directly, from this process's own releases).
	accept func(payload string) bool

	mu     sync.Mutex
	conn   *psConn // the classic connection (nil until the first SUBSCRIBE)
	closed bool
	chans  map[string]*chanState
	nextID uint64
	rounds uint64 // numbers subscriptions and their confirmations (chanState.round)

	// mode, when set, may make the channels sharded (interop.go); shards are then their
	// connections, one per node (pubsub_sharded.go).
	mode   *pubsubMode
	shards *shardConns
}

// chanState is one subscribed channel. Fields are guarded by subscriber.mu.
type chanState struct {
	refs      int           // local waiters on the channel
	sent      uint64        // SUBSCRIBE commands sent for it
	confirmed uint64        // subscribe confirmations received
	ready     chan struct{} // closed once confirmed as often as sent
	// rings: what each joined listener wants called on a release message, with the channel it
	// came on (a pattern's listeners hear many channels) and its payload.
	rings map[uint64]func(channel, payload string)
	// round numbers the subscriptions of this channel across the subscriber (a new SUBSCRIBE,
	// a reconnect's confirmation), so a pause in between is seen by patternRound.
	round uint64
	// sharded: subscribed with SSUBSCRIBE; rehomed: subscribed again on another node after its
	// slot moved, so its listeners are rung once that is confirmed (a release may have come
	// in between).
	sharded, rehomed bool
}

// waitHandle is one listener's registration on a channel; copied out under the lock.
type waitHandle struct {
	ch      string
	key     string // ch's key in subscriber.chans
	pattern bool
	st      *chanState
	id      uint64
	ready   <-chan struct{}
}

// newSubscriber makes a Locker's subscriber; mode is nil for a kind whose pub/sub is always
// classic.
func newSubscriber(rdb redis.UniversalClient, log *slog.Logger, mode *pubsubMode, accept func(payload string) bool) *subscriber {
	return &subscriber{rdb: rdb, log: log, mode: mode, accept: accept, chans: map[string]*chanState{}}
}

// joinPattern is listen for a PSUBSCRIBE pattern: ring is told the channel and payload of each
// message, and the pattern itself as the channel, with payload "", when messages may have gone
// unheard (a resubscription). The listeners of one pattern must be alike, since each message is
// handed to one of them only: the fair lock's waiters of one process share their key's pattern,
// and each message names the one waiter it is for. Handing it to every listener acted on it once
// per waiter (64 times with 64 waiters, each time under the fair lock's mutex and this
// subscriber's).
func (s *subscriber) joinPattern(ctx context.Context, pattern string, ring func(channel, payload string)) waitHandle {
	return s.listen(ctx, pattern, true, ring)
}

// patternRound identifies the current subscription to pattern while it is confirmed and has
// listeners: the same non-zero value at two moments means it was confirmed, without a break,
// all along between them. 0: not subscribed, or not confirmed yet.
func (s *subscriber) patternRound(pattern string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chans[patternKey(pattern)]
	if st == nil || st.refs == 0 || st.confirmed < st.sent || st.sent == 0 || s.closed {
		return 0
	}
	return st.round
}

// patternKey keeps patterns apart from channels of the same name in s.chans.
func patternKey(pattern string) string { return "\x00p:" + pattern }

func (s *subscriber) listen(ctx context.Context, ch string, pattern bool, ring func(channel, payload string)) waitHandle {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ch
	if pattern {
		key = patternKey(ch)
	}
	st := s.chans[key]
	if st == nil {
		st = &chanState{rings: map[uint64]func(string, string){}}
		s.chans[key] = st
	}
	s.nextID++
	id := s.nextID
	st.rings[id] = ring
	st.refs++
	if st.refs == 1 {
		st.ready = make(chan struct{})
		if s.closed {
			close(st.ready)
			return waitHandle{ch: ch, key: key, pattern: pattern, st: st, id: id, ready: st.ready}
		}
		// Sent while holding mu, so SUBSCRIBE and UNSUBSCRIBE of a channel reach Redis in the
		// order this map saw them.
		st.sent++
		s.rounds++
		st.round = s.rounds
		if !pattern && s.mode.useSharded(ctx) {
			st.sharded = true
			s.shardSubscribe(ctx, ch)
			return waitHandle{ch: ch, key: key, pattern: pattern, st: st, id: id, ready: st.ready}
		}
		if s.conn == nil {
			s.conn = s.receive("", s.rdb.Subscribe(context.Background()))
		}
		subscribe := s.conn.ps.Subscribe
		if pattern {
			subscribe = s.conn.ps.PSubscribe
		}
		if err := subscribe(ctx, ch); err != nil {
			// go-redis keeps the channel and subscribes it again when it reconnects.
			s.log.Debug("subscribe to unlock channel", "channel", ch, "pattern", pattern, "err", err)
		}
	}
	return waitHandle{ch: ch, key: key, pattern: pattern, st: st, id: id, ready: st.ready}
}

// leave unregisters a listener; the last one unsubscribes the channel.
func (s *subscriber) leave(h waitHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := h.st
	delete(st.rings, h.id)
	st.refs--
	if st.refs > 0 {
		return
	}
	if st.sharded {
		s.shardUnsubscribe(h.ch)
	} else if s.conn != nil && !s.closed {
		unsubscribe := s.conn.ps.Unsubscribe
		if h.pattern {
			unsubscribe = s.conn.ps.PUnsubscribe
		}
		if err := unsubscribe(context.Background(), h.ch); err != nil {
			s.log.Debug("unsubscribe from unlock channel", "channel", h.ch, "pattern", h.pattern, "err", err)
		}
	}
	if st.confirmed >= st.sent && s.chans[h.key] == st {
		delete(s.chans, h.key)
	}
}

// psConn is one pub/sub connection of the subscriber and its receive loop: the classic one, or
// the sharded one of a node (addr; "" on a single server).
type psConn struct {
	addr string
	ps   *redis.PubSub
	done chan struct{} // closed when the receive loop has ended
}

// receive starts ps's receive loop, which hands every message and confirmation to dispatch and a
// SUNSUBSCRIBE to shardLeft (pubsub_sharded.go). Called with mu held.
func (s *subscriber) receive(addr string, ps *redis.PubSub) *psConn {
	c := &psConn{addr: addr, ps: ps, done: make(chan struct{})}
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(256))
	go func() {
		defer close(c.done)
		for m := range msgs {
			if sub, ok := m.(*redis.Subscription); ok && sub.Kind == "sunsubscribe" {
				s.shardLeft(c, sub.Channel)
				continue
			}
			s.dispatch(m)
		}
	}()
	return c
}

// close ends the connection and waits for its receive loop.
func (c *psConn) close() error {
	err := c.ps.Close()
	<-c.done
	return err
}

// dispatch hands m to its listeners. They are rung once s.mu is released: a ring may take a
// waiter's turn to its end, and the queue that then empties leaves its channel (leave takes
// s.mu), from this goroutine.
func (s *subscriber) dispatch(m any) {
	for _, ring := range s.route(m) {
		ring()
	}
}

// route does the bookkeeping of m with s.mu held, and answers the rings it calls for, in order.
func (s *subscriber) route(m any) (rings []func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := m.(type) {
	case *redis.Subscription:
		key := m.Channel
		switch m.Kind {
		case "subscribe", "ssubscribe":
		case "psubscribe":
			key = patternKey(m.Channel)
		default:
			return nil
		}
		st := s.chans[key]
		if st == nil {
			return nil
		}
		// A confirmation beyond what was sent is a reconnect's resubscription: releases published
		// while the connection was broken went unheard, so ring the channel's listeners (a
		// spurious ring costs one attempt; a lost one would cost a waiter its whole wait, behind
		// a holder that a restarted Redis no longer knows). A pattern's listener is told the
		// pattern itself as the channel (joinPattern).
		if st.confirmed >= st.sent && st.refs > 0 {
			rings = append(rings, st.ringEvery(m.Channel, m.Kind == "psubscribe")...)
		}
		// A reconnect resubscribes every channel at once; never count past what was sent.
		st.confirmed = min(st.confirmed+1, st.sent)
		s.rounds++
		st.round = s.rounds
		if st.confirmed >= st.sent && st.ready != nil && !isDone(st.ready) {
			close(st.ready)
		}
		if st.rehomed && st.confirmed >= st.sent {
			st.rehomed = false
			rings = append(rings, st.ringEvery(m.Channel, false)...)
		}
		if st.refs == 0 && st.confirmed >= st.sent {
			delete(s.chans, key)
		}
	case *redis.Message:
		if !s.accept(m.Payload) {
			return nil
		}
		key := m.Channel
		if m.Pattern != "" {
			key = patternKey(m.Pattern)
		}
		st := s.chans[key]
		if st == nil || st.refs == 0 {
			return nil
		}
		for _, ring := range st.rings {
			rings = append(rings, func() { ring(m.Channel, m.Payload) })
			if m.Pattern != "" {
				break // a pattern's listeners are alike (joinPattern): one handles each message
			}
		}
	}
	return rings
}

// ringEvery answers the rings that tell st's listeners that messages on ch may have gone
// unheard (payload ""): every one of them, or one for a pattern, whose listeners are alike
// (joinPattern).
func (st *chanState) ringEvery(ch string, pattern bool) (rings []func()) {
	for _, ring := range st.rings {
		rings = append(rings, func() { ring(ch, "") })
		if pattern {
			break
		}
	}
	return rings
}

// Close ends the pub/sub connections. Waiters still waiting fall back to their timers.
func (s *subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var conns []*psConn
	if s.conn != nil {
		conns = append(conns, s.conn)
	}
	if s.shards != nil {
		for _, c := range s.shards.conns {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	var err error
	for _, c := range conns {
		err = errors.Join(err, c.close())
	}
	return redisErr("close pub/sub", err)
}
