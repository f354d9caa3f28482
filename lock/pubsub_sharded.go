package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sharded pub/sub for the subscriber (pubsub.go). A sharded channel is served only by the node
// that owns its slot, so there is one SSUBSCRIBE connection per node, each with its own receive
// loop feeding the subscriber's dispatch. When a slot moves, the node that lost it ends the
// subscription itself (an SUNSUBSCRIBE it pushes, not one we sent); the channel is then
// subscribed again on the slot's new owner, and its listeners are rung once that is confirmed,
// since a release may have been announced on the new owner in between. Everything here is
// guarded by subscriber.mu. Its rules of waiting, beside waiting.go's:
//
//   - S1. A channel is subscribed with SSUBSCRIBE on the node that serves its slot, and again on
//     its new owner when the slot moves; its listeners are rung once that is confirmed. The grant
//     channel of lua and fenced stays classic pub/sub. Checked by TestShardedPubSubOnOneServer,
//     internal/interop's TestClusterSubscriptionFollowsTheSlot and
//     TestClusterWaiterWakesOnForeignSPUBLISH, and script's TestShardedBuildsDifferOnlyInPublish.
//   - S2. Sharded pub/sub has no patterns, so the unlock message always goes out and every
//     process's head hears it (R2). Checked by TestRFencedLayoutWakesTheOtherSide/sharded=true and
//     internal/interop's TestClusterUnlockIsSharded.

// shardConns are a subscriber's sharded connections.
type shardConns struct {
	conns map[string]*psConn // by node address ("" on a single server)
	home  map[string]*psConn // channel -> the connection it is subscribed on
	// ours counts the SUNSUBSCRIBE commands we sent per node and channel whose confirmation has not come
	// back yet, to tell them from the pushes of a node that lost the slot.
	ours map[string]int
}

// nodeFor is the client of the node that serves ch: its slot's master on a cluster, else the
// client itself (Redis 7 serves sharded pub/sub on a single server too).
func (s *subscriber) nodeFor(ctx context.Context, ch string) (redis.UniversalClient, string, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return s.rdb, "", nil
	}
	node, err := cc.MasterForKey(ctx, ch)
	if err != nil {
		return nil, "", err
	}
	return node, node.Options().Addr, nil
}

// shardSubscribe sends SSUBSCRIBE for ch on its node's connection, opening it when needed. A
// failure is logged: the waiters then wake on their timers, and go-redis subscribes the channel
// again when the connection comes back.
func (s *subscriber) shardSubscribe(ctx context.Context, ch string) {
	if s.shards == nil {
		s.shards = &shardConns{conns: map[string]*psConn{}, home: map[string]*psConn{}, ours: map[string]int{}}
	}
	node, addr, err := s.nodeFor(ctx, ch)
	if err != nil {
		s.log.Debug("sharded subscribe: find the channel's node", "channel", ch, "err", err)
		return
	}
	c := s.shards.conns[addr]
	if c == nil {
		c = s.receive(addr, node.SSubscribe(context.Background()))
		s.shards.conns[addr] = c
	}
	s.shards.home[ch] = c
	if err := c.ps.SSubscribe(ctx, ch); err != nil {
		s.log.Debug("sharded subscribe to unlock channel", "channel", ch, "node", addr, "err", err)
	}
}

// shardUnsubscribe sends SUNSUBSCRIBE for ch (its last listener left).
func (s *subscriber) shardUnsubscribe(ch string) {
	if s.shards == nil || s.closed {
		return
	}
	c := s.shards.home[ch]
	if c == nil {
		return
	}
	delete(s.shards.home, ch)
	s.shards.ours[c.addr+"\x00"+ch]++
	if err := c.ps.SUnsubscribe(context.Background(), ch); err != nil {
		s.shards.ours[c.addr+"\x00"+ch]--
		s.log.Debug("sharded unsubscribe from unlock channel", "channel", ch, "node", c.addr, "err", err)
	}
}

// shardLeft handles an SUNSUBSCRIBE reply on c: the confirmation of ours, or the node telling us
// it no longer serves ch's slot; then ch, if still wanted, moves to the slot's new owner.
func (s *subscriber) shardLeft(c *psConn, ch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shards == nil || s.closed {
		return
	}
	if id := c.addr + "\x00" + ch; s.shards.ours[id] > 0 {
		if s.shards.ours[id]--; s.shards.ours[id] == 0 {
			delete(s.shards.ours, id)
		}
		return
	}
	st := s.chans[ch]
	if st == nil || st.refs == 0 || !st.sharded || s.shards.home[ch] != c {
		return
	}
	s.log.Debug("sharded unlock channel moved", "channel", ch, "from", c.addr)
	// Drop it from this connection's set, or a reconnect would subscribe it here again.
	s.shards.ours[c.addr+"\x00"+ch]++
	if err := c.ps.SUnsubscribe(context.Background(), ch); err != nil {
		s.log.Debug("sharded unsubscribe from a moved channel", "channel", ch, "node", c.addr, "err", err)
	}
	delete(s.shards.home, ch)
	st.sent++
	s.rounds++
	st.round = s.rounds
	st.rehomed = true
	go s.rehome(ch, c.addr)
}

// rehome subscribes ch again once the cluster's slot map names another node for it (or after
// two seconds, on whichever node it names then).
func (s *subscriber) rehome(ch, from string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		for {
			cc.ReloadState(ctx)
			if _, addr, err := s.nodeFor(ctx, ch); err == nil && addr != from {
				break
			}
			if !sleep(ctx, 50*time.Millisecond) {
				break
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chans[ch]
	if s.closed || st == nil || st.refs == 0 || !st.sharded || s.shards.home[ch] != nil {
		return
	}
	s.shardSubscribe(ctx, ch)
}
