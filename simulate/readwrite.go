package simulate

import (
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// rwKind is NewReadWrite (lock/readwrite.go): Redisson's RReadWriteLock, one hash with its mode,
// a field per reader and one for the writer, and a timeout key per read hold. The clients of
// process 1 take the write side and every other client the read side, so that at 2 clients a
// writer and a reader exclude each other and at 3 two readers may share. A process uses one side
// only, as each side of the library has a subscription and a queue of its own. Each acquisition is its own owner:
// its instance id is its process ("p<id>") and its owner the acquisition ("c<id>.r<n>"), so
// Client.Value is its read field, and its write field that with ":write".
//
// The checks of the kind (client.go write, reread; liveness.go checkPrompt): a reader reads the
// resource on entering and again before leaving, and a write is counted against every reader's
// entry; a reader must not sleep while no writer holds the lock.
type rwKind struct{ base }

func (rwKind) watchdog() bool { return true }

// queue: a waiter waits in its side's queue, rung by every message on the lock's channel, which
// its process hears only once subscribed.
func (rwKind) queue() (core.QueueConfig, bool) { return queueConfig(false), true }
func (rwKind) wakes() bool                     { return true }
func (rwKind) downBound() int64                { return rideBound }

// heldHint: a reader that wins leaves the next reader of its process free to try at once, as the
// library's side does (its Hold Shares).
func (k rwKind) heldHint(s *Sim, c *Client) int64 {
	return ms(core.WinnerHint(k.side(c), s.cfg.Lease))
}

// relook: a waiter that hears no release sleeps on the lock's PTTL, at most a lease.
func (rwKind) relook(s *Sim) int64 { return ms(s.cfg.Lease) }

// reader: the clients of process 1 write, the others read (a process takes one side: the
// library's Locker is the read or the write side).
func (rwKind) reader(c *Client) bool { return c.Proc != 1 }

// holds: the hash has v's read or write field.
func (rwKind) holds(k keySnap, v string, _ int64) bool {
	return k.Key == lockName && (slices.Contains(k.Hash, v) || slices.Contains(k.Hash, script.WriteField(v)))
}

// admits: a reader would be let in now, no writer being inside nor in the hash alive.
func (k rwKind) admits(w *World, c *Client) bool {
	if !k.reader(c) {
		return false
	}
	for i := range w.Clients {
		if d := &w.Clients[i]; d.Inside && !k.reader(d) {
			return false
		}
	}
	for _, key := range w.Masters[0].Data {
		if key.Key == lockName && alive(w, key, w.Now) && slices.ContainsFunc(key.Hash, func(f string) bool { return strings.HasSuffix(f, ":write") }) {
			return false
		}
	}
	return true
}

// side is c's side of the lock: process 1 writes, the others read.
func (k rwKind) side(c *Client) core.Hold {
	if k.reader(c) {
		return core.ReadSide
	}
	return core.WriteSide
}

// acquire is one attempt (rwLease.try): the side's acquire script, held on nil, else the lock's
// PTTL, which bounds the waiter's sleep (a master down: it looks again at once).
func (k rwKind) acquire(s *Sim, w *World, c *Client) {
	if c.Over {
		s.note(w, c.name(), "give up", "the wait is over")
		s.giveUp(w, c)
		return
	}
	c.Sent = w.Now
	switch t, answered := s.attempt(w, c, 0, k.side(c), s.ask(w, c)); {
	case t.Held:
		s.hold(w, c, 0, w.Now, ms(s.cfg.Lease))
	case !answered && s.retryInPlace(w, c):
	case !answered:
		s.ride(w, c)
	case t.Odd || t.Refused:
		s.failed(w, c, -1)
	default:
		s.failed(w, c, waitMs(t.Wait))
	}
}

// renew: a reader's watchdog pushes out the hash and its timeout keys, a writer's its field's
// hash as RLock's does.
func (k rwKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	return true, renewOutcome(s.call(w, c, 0, k.side(c).Renew(s.ask(w, c))))
}

// release gives the hold back (rwLease.release): a reader's release publishes Redisson's unlock
// message when it deletes the lock, a writer's its read-unlock message whenever it frees it.
func (k rwKind) release(s *Sim, w *World, c *Client) {
	s.call(w, c, 0, k.side(c).Release(s.ask(w, c)))
	s.released(w, c)
}

// route: the lock's channel rings every process that waits (both messages ring either side).
func (rwKind) route(w *World, _ int, channel string) []int {
	return waitersOn(w, channel, core.ReadSide.Channel(lockName))
}

func (rwKind) deliver(s *Sim, w *World, c *Client, m msg) { heard(s, w, c, 0, core.ReadSide, m) }

func (k rwKind) counted(c *Client) (core.Hold, bool) { return k.side(c), true }

func init() { kinds["readwrite"] = rwKind{} }
