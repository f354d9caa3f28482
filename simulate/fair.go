package simulate

import (
	"fmt"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lock/core"

	"github.com/seckill-lab/seckill/lock/script"
)

// fairQueue is Redisson's queue of the fair lock.
var fairQueue = script.FairKeys(lockName)[1]

const (
	fairLagCap   = 86_400_000
	fairBeatMs   = int64(core.AliveEvery / time.Millisecond)
	fairAliveFor = int64(core.AliveFor / time.Millisecond)
)

// fairKind is NewFair (lock/fair.go): every waiter queues in Redis at once; a release hands the
// lock to the first waiter and tells it on its own channel; a waiting process beats every 125 ms.
type fairKind struct{ base }

func (fairKind) watchdog() bool { return true }

// downBound: a waiter that met the master down rides, pausing up to rideBound before it tries
// again; one asleep in the queue is rung by its process's next heartbeat, at most
// core.AliveEvery after the master is back, when it reads the lock free (F6).
func (fairKind) downBound() int64  { return max(rideBound, fairBeatMs) }
func (fairKind) relook(*Sim) int64 { return relookLine }

// fairCalls are the scripts of c's process, which the library's fairLocker sends (its lag capped as
// the library's is, with no Redisson client in the queue).
func fairCalls(c *Client) script.Fair {
	return script.Fair{ID: c.Value[:strings.IndexByte(c.Value, ':')], LagCap: fairLagCap}
}

// queue: a fair waiter is the one waiter of a core.Queue of its own, as in the library's
// waitTurn (its client's part of the process, Sim.part): the queue decides when it looks again
// (the nap its attempt read, or a ring: a message to its channel, or its process's heartbeat) and
// when its wait is over. It subscribes to nothing through it (Listens off): its channel is its own.
func (fairKind) queue() (core.QueueConfig, bool) { return core.QueueConfig{}, true }

func (k fairKind) acquire(s *Sim, w *World, c *Client) {
	switch {
	case c.Granted:
		s.note(w, c.name(), "take the lock handed over", "")
		ttl := ms(s.cfg.Lease) // handed over here: it lives the lease
		if !c.GrantHere {
			ttl = min(ttl, k.grantTTL(s)) // from another process: the grant TTL
		}
		s.handedOver(w, c, 0, ttl, func() any {
			return s.call(w, c, 0, core.RLock.Renew(s.ask(w, c)))
		})
	case c.Over:
		s.call(w, c, 0, fairCalls(c).Cancel(lockName, c.Value, ms(s.cfg.Wait)))
		c.KeepPlace = false
		s.giveUp(w, c)
	default:
		k.try(s, w, c)
	}
}

// timerDue: the waiting process's heartbeat is due (the library's beats on a timer of its own).
func (k fairKind) timerDue(s *Sim, w *World, c *Client) bool {
	if c.BeatAt == 0 || w.Now < c.BeatAt || c.Granted {
		return false
	}
	k.beat(s, w, c)
	return true
}

// try is one run of the acquire script (fairLocker.try).
func (k fairKind) try(s *Sim, w *World, c *Client) {
	c.Sent = w.Now
	queue := k.redisQueue(w)
	r := s.call(w, c, 0, fairCalls(c).Acquire(lockName, c.Value, ms(s.cfg.Lease), ms(s.cfg.Wait), w.Now, k.grantTTL(s), true,
		max(c.Deadline-w.Now+1, 1), w.Now+fairAliveFor))
	if r == errDown {
		// No answer (a refused connection): its heartbeat stops with its wait, and the
		// acquisition rides (Locker.ride) with the same owner, whose place in the queue is kept for
		// it and left if it ends without the lock (core.FairLeavesNow, the library's leaveAtEnd).
		c.BeatAt = 0
		if core.FairLeavesNow(true) {
			s.giveBackLater(w, c, c.Value, w.Now+max(ms(s.cfg.Wait), ms(s.cfg.Lease))) // giveUp
		} else {
			c.KeepPlace = true
		}
		s.ride(w, c)
		return
	}
	if r == nil {
		k.checkFIFO(w, c.Value, queue)
		s.hold(w, c, 0, w.Now, ms(s.cfg.Lease))
		return
	}
	due, _ := asInt(r)
	if c.BeatAt == 0 { // its process's heartbeat: the one under way, or one starting now
		c.BeatAt = w.Now + fairBeatMs
		for _, d := range k.waiters(w, c) {
			if d.BeatAt != 0 {
				c.BeatAt = d.BeatAt
			}
		}
	}
	s.failed(w, c, ms(core.FairNap(dur(due), s.cfg.Wait)))
}

// beat is the waiting process's heartbeat (fairLocker.heartbeat), its reading read by the
// library's core.FairBeatSaid: it rings the process's waiters the reading names, and the next
// beat is set for every waiter of the process, so the process beats once.
func (k fairKind) beat(s *Sim, w *World, c *Client) {
	reply := s.call(w, c, 0, fairCalls(c).Beat(lockName, w.Now, w.Now+fairAliveFor))
	r, _ := reply.([]any)
	b := core.FairBeat{Next: core.AliveEvery}
	if head, pttl, holder, ok := script.ReadFairBeat(r); ok {
		b = core.FairBeatSaid(head, pttl, holder)
	} else if reply != errDown {
		s.unexpected(w, c, "FairBeat", reply)
	}
	waiters := k.waiters(w, c)
	for _, d := range waiters {
		d.BeatAt = w.Now + ms(b.Next)
	}
	for _, d := range waiters {
		if b.Rings(d.Value) {
			s.ring(w, d, s.part(d)) // its attempt looks again now (and takes a lock handed to it)
		} else if d == c {
			s.queueSays(w, c, s.part(c), w.proc(c).Qs[s.part(c)].Tick(at(w.Now)))
		}
	}
}

// waiters are the clients of c's process (c among them) that wait for the lock.
func (fairKind) waiters(w *World, c *Client) []*Client {
	var out []*Client
	mates := w.mates(c)
	for i := range mates {
		if d := &mates[i]; d.PC == pcAcquire && d.Queued && !d.Done && !d.Riding {
			out = append(out, d)
		}
	}
	return out
}

// grantTTL is how long a lock handed to a waiter of this library lives before its holder pushes
// it out to its lease (the line kinds' core.MaxGrantTTL bound).
func (k fairKind) grantTTL(s *Sim) int64 {
	return ms(core.GrantTTL(s.cfg.Lease, s.cfg.Wait, core.MaxGrantTTL))
}

// giveBack takes field out of Redisson's queue (the library's cancel); answered unless the master
// is down.
func (k fairKind) giveBack(s *Sim, w *World, c *Client, field string) bool {
	return s.call(w, c, 0, fairCalls(c).Cancel(lockName, field, ms(s.cfg.Wait))) != errDown
}

func (k fairKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	return true, renewHash(s, w, c, 0)
}

func (k fairKind) release(s *Sim, w *World, c *Client) {
	k.releaseField(s, w, c, c.Value, ms(s.cfg.Lease), ms(s.cfg.Wait))
	s.released(w, c)
}

// releaseField runs the release script once; a lock it hands to a waiter of this process that
// has left is passed on by the next step (fairLocker.release's loop).
func (k fairKind) releaseField(s *Sim, w *World, c *Client, field string, leaseMs, waitMs int64) {
	queue := k.redisQueue(w)
	r, _ := s.call(w, c, 0, fairCalls(c).Release(lockName, field, leaseMs, w.Now, ms(s.cfg.Lease), waitMs)).([]any)
	kind, next, _ := script.ReadFairRelease(r)
	if kind == 2 {
		k.checkFIFO(w, next, queue)
	}
	if (kind == 1 || kind == 2) && next != "" {
		k.tellHere(s, w, c, next, kind == 2)
	}
}

// tellHere is what a release of c's process does for next, first in line, when it waits in this
// process (fairLocker.release): a waiter handed the lock (granted) is granted it and rung, else
// rung to look again. One handed the lock that has left without it is released for in turn
// (PassOn), unless it holds the lock.
func (k fairKind) tellHere(s *Sim, w *World, c *Client, next string, granted bool) {
	for _, d := range k.waiters(w, c) {
		if d.Value == next {
			d.Granted, d.GrantHere = d.Granted || granted, d.GrantHere || granted
			s.ring(w, d, s.part(d))
			return
		}
	}
	mates := w.mates(c)
	for i := range mates {
		if mates[i].Inside && mates[i].Value == next {
			return
		}
	}
	if granted && strings.HasPrefix(next, fairCalls(c).ID+":") {
		c.PassOn = next
	}
}

// redisQueue is the fair queue in Redis now, first waiter first.
func (k fairKind) redisQueue(w *World) []string {
	for _, key := range w.Masters[0].Data {
		if key.Key == fairQueue {
			return key.List
		}
	}
	return nil
}

// checkFIFO: the lock went to field, and queue was Redis's queue just before. With no fault in
// the run, nobody queued ahead of field may still be waiting, live, within its wait: the first
// to queue is the first served (Redisson's scripts drop only a waiter whose turn has timed out,
// which takes a hold longer than a fault-free run has).
func (k fairKind) checkFIFO(w *World, field string, queue []string) {
	if w.Violation != "" || w.FaultsUsed > 0 {
		return
	}
	for _, ahead := range queue {
		if ahead == field {
			return
		}
		for i := range w.Clients {
			c := &w.Clients[i]
			if c.Value == ahead && c.PC == pcAcquire && !c.Done && !c.Crashed && w.Now < c.Deadline {
				w.Violation = fmt.Sprintf("fifo: %s got the fair lock while %s, queued ahead of it, still waited", field, c.acq())
				return
			}
		}
	}
}

func (k fairKind) passOn(s *Sim, w *World, c *Client) {
	f := c.PassOn
	c.PassOn = ""
	k.releaseField(s, w, c, f, ms(s.cfg.Lease), 0)
}

// route: a waiter's own channel "<unlock channel>:<field>" goes to the process the field names.
func (k fairKind) route(w *World, _ int, channel string) []int {
	field, ok := strings.CutPrefix(channel, unlockChannel+":")
	if !ok {
		return nil
	}
	// The process the field names hears it (its pattern); the waiter with that field takes it, or
	// else the process's first client, which gives back a grant to a waiter that left.
	to := -1
	for i, c := range w.Clients {
		switch {
		case !strings.HasPrefix(field, "p"+itoa(int64(c.Proc))+":"):
		case c.Value == field:
			return []int{i}
		case to < 0:
			to = i
		}
	}
	if to < 0 {
		return nil
	}
	return []int{to}
}

// deliver: a grant for the waiting field hands it the lock; one for a field that left is
// given back (releaseFor); the unlock message rings the waiter.
func (k fairKind) deliver(s *Sim, w *World, c *Client, m msg) {
	field := strings.TrimPrefix(m.Channel, unlockChannel+":")
	waiting := c.PC == pcAcquire && !c.Done && !c.Riding && c.Value == field
	switch {
	case m.Payload == script.FairGrantMessage && waiting:
		c.Granted = true
		s.ring(w, c, s.part(c))
	case m.Payload == script.FairGrantMessage && !(c.Inside && c.Value == field):
		c.PassOn = field
	case waiting:
		s.ring(w, c, s.part(c))
	}
}

func init() { kinds["fair"] = fairKind{} }

func (fairKind) wakes() bool { return true }
