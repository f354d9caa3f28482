package simulate

import (
	"slices"

	"github.com/seckill-lab/seckill/lock/core"
)

// multiKind is NewMultilock (lock/multilock.go): Redisson's RLock on each of three independent
// masters in turn, each part waiting (Redisson's unlock message or the holder's PTTL) within
// what is left of the wait; a part that cannot be had in time gives the others back.
type multiKind struct{ base }

func (multiKind) masters() int   { return 3 }
func (multiKind) watchdog() bool { return true }

// freeNeeds: the parts are taken in one order, so a part held on any master keeps the others out.
func (multiKind) freeNeeds() int  { return 3 }
func (multiKind) perMaster() bool { return true }

// relook: with no message lost, a waiter for a part is woken by the unlock message of every
// release; G is the line kinds' core.LostGrantBound, a margin above the immediate wake-up.
func (multiKind) relook(*Sim) int64 { return relookLine }

// lostBound: a waiter whose unlock message is lost sleeps until the holder's PTTL, up to a lease.
func (multiKind) lostBound(s *Sim) int64 { return ms(s.cfg.Lease) }

// downBound: a waiter that met a master down pauses up to rideBound before it tries again.
func (multiKind) downBound() int64 { return rideBound }

// queue: each part is taken by a reentrant Locker of its master, whose queue hears Redisson's
// unlock message; the parts are waited for one after the other, each in a queue of its own.
func (multiKind) queue() (core.QueueConfig, bool) { return queueConfig(false), true }

func (k multiKind) acquire(s *Sim, w *World, c *Client) {
	if c.Sub == 1 { // giving back the parts already taken, one master a step
		k.giveBackNext(s, w, c)
		return
	}
	if c.Over {
		c.Sub, c.I = 1, 0
		k.giveBackNext(s, w, c)
		return
	}
	t, answered := s.attempt(w, c, c.I, core.RLock, s.ask(w, c))
	if !answered && s.retryInPlace(w, c) {
		return // the part again, in place
	}
	if !answered {
		// A master that does not answer fails the attempt at once: the parts taken are given
		// back, one a step, then the acquisition rides (multilock.go, Locker.ride).
		s.leave(w, c)
		c.Sub, c.I = 1, 0
		return
	}
	if t.Held {
		if c.I == 0 {
			c.Start = w.Now // the first part's TTL runs out first
		}
		c.Got[c.I] = true
		if c.I == 2 {
			s.hold(w, c, 0, c.Start, ms(s.cfg.Lease))
			c.Got = [3]bool{true, true, true}
			return
		}
		s.won(w, c) // out of this part's queue
		c.I++
		cfg, _ := k.queue()
		s.waitIn(w, c, cfg) // the next part, on the next master
		return
	}
	ttl := waitMs(t.Wait)
	if ttl < 0 {
		ttl = ms(s.cfg.Lease)
	}
	s.failed(w, c, ttl)
}

// giveBackNext releases the next part taken; once none is left, the acquisition gives up (its
// wait is over) or rides (a master did not answer).
func (k multiKind) giveBackNext(s *Sim, w *World, c *Client) {
	i := slices.Index(c.Got[:], true)
	switch {
	case i < 0 && c.Over:
		s.giveUp(w, c)
		return
	case i < 0:
		s.ride(w, c)
		return
	}
	c.Got[i] = false
	k.releasePart(s, w, c, i)
}

func (k multiKind) releasePart(s *Sim, w *World, c *Client, i int) {
	s.call(w, c, i, core.RLock.Release(s.ask(w, c)))
}

// renew: each part is renewed on its master; one part refused loses the lock, one not answered
// makes the round fail (tried again while the lease lasts).
func (k multiKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	if c.I == 0 {
		c.RoundOut = renewOK
	}
	c.RoundOut = max(c.RoundOut, renewHash(s, w, c, c.I))
	c.I = (c.I + 1) % 3
	return c.I == 0, c.RoundOut
}

func (k multiKind) release(s *Sim, w *World, c *Client) {
	i := slices.Index(c.Got[:], true)
	c.Got[i] = false
	k.releasePart(s, w, c, i)
	if !slices.Contains(c.Got[:], true) {
		s.released(w, c)
	}
}

// route: Redisson's unlock message on a master rings that master's part's queue in every
// process where a client waits for that part.
func (k multiKind) route(w *World, m int, channel string) []int {
	var to []int
	for _, c := range w.Clients {
		if box := w.mailbox(&c); channel == core.RLock.Channel(lockName) && !c.Crashed && !c.Done && c.PC == pcAcquire && c.Sub == 0 && c.I == m &&
			!slices.Contains(to, box) {
			to = append(to, box)
		}
	}
	return to
}

func (k multiKind) deliver(s *Sim, w *World, c *Client, m msg) { heard(s, w, c, m.Part, core.RLock, m) }

func (multiKind) counted(*Client) (core.Hold, bool) { return core.RLock, true }

func init() { kinds["multilock"] = multiKind{} }

func (multiKind) wakes() bool { return true }
