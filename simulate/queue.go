package simulate

import (
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// The waiting of the library's kinds but fair: each acquisition waits in its process's queue for
// the key, lock/core's Queue, the one the library's handoff drives. The queue decides when the
// client tries, how long it sleeps after a failed attempt, that it looks again after subscribing,
// that a ring wakes it, and when its wait is over. With one client per process it is the only
// waiter in its queue. Its process's subscription is confirmed by a message of its own, which
// the scheduler delivers like any other: at once, or late when a pub/sub fault delays it.

// queueConfig is the library's queue of a kind that listens to its key's releases: sure is
// whether every release it must hear rings it before the subscription is confirmed (handoff's
// localRing: lua, fenced and redlock ring their own).
func queueConfig(sure bool) core.QueueConfig {
	return core.QueueConfig{Listens: true, SureRing: sure, Linger: core.Linger, ConfirmWait: core.ConfirmWait}
}

// waitIn starts c's wait in a queue of its own (an acquisition, or a multilock's part).
func (s *Sim) waitIn(w *World, c *Client, cfg core.QueueConfig) {
	c.Queued, c.Q, c.Turn, c.Over = true, core.NewQueue(cfg), false, false
	s.queueSays(w, c, c.Q.Enter(at(w.Now), 1, at(c.Deadline)))
}

// queueSays does what the queue answered: the client tries now (Turn), its wait is over (Over:
// its next step leaves), or it sleeps until the queue's timer or a ring.
func (s *Sim) queueSays(w *World, c *Client, r core.QueueReady) {
	if r.Subscribe {
		r = s.subscribe(w, c, r)
	}
	switch {
	case len(r.GiveUp) > 0:
		c.Over, c.Turn, c.Waiting = true, false, false
	case r.Try != 0:
		c.Turn, c.Waiting = true, false
	case !r.Wake.IsZero():
		c.sleep(msAt(r.Wake))
	}
}

// failed tells c's queue its attempt did not win; retry is when to look again at the latest in
// ms (< 0: only when rung).
func (s *Sim) failed(w *World, c *Client, retry int64) {
	c.Turn = false
	d := time.Duration(-1)
	if retry >= 0 {
		d = dur(retry)
	}
	s.queueSays(w, c, c.Q.Failed(at(w.Now), 1, d))
}

// won tells c's queue its attempt won.
func (s *Sim) won(w *World, c *Client) {
	c.Turn = false
	c.Q.Held(at(w.Now), 1, at(w.Now+ms(s.cfg.Lease)))
}

// ring is a release heard by c's process.
func (s *Sim) ring(w *World, c *Client) {
	if c.Queued && c.PC == pcAcquire {
		s.queueSays(w, c, c.Q.Ring(at(w.Now)))
	}
}

// queueTurn is the queue's part of an acquisition's step: its timer, when the client wakes on
// it. It reports whether the kind's step is due (the client's turn to try, or its wait is over).
func (s *Sim) queueTurn(w *World, c *Client) bool {
	if !c.Queued || c.Turn || c.Over {
		return true
	}
	s.queueSays(w, c, c.Q.Tick(at(w.Now)))
	return c.Turn || c.Over
}

// listen is a process's subscription: none, asked (its confirmation on the way), or on.
type listen int8

const (
	listenNone listen = iota
	listenAsked
	listenOn
)

// confirmation is the channel name of the message that confirms a process's subscription (not a
// channel of Redis's: the reply to SUBSCRIBE, which the scheduler delivers, delays or reorders
// like a message).
const confirmation = "(subscribe confirmed)"

// subscribe: c's queue asked its process to subscribe. A process already subscribed is confirmed
// at once (the library's subscriber answers from what it has); else the confirmation is sent.
func (s *Sim) subscribe(w *World, c *Client, r core.QueueReady) core.QueueReady {
	if c.Listen == listenOn {
		return c.Q.Confirmed(at(w.Now))
	}
	s.listen(w, c)
	return r
}

// listen starts c's process's subscription unless it has one: its confirmation is on its way.
func (s *Sim) listen(w *World, c *Client) {
	if c.Listen == listenNone {
		c.Listen = listenAsked
		w.Msgs = append(w.Msgs, msg{To: c.ID - 1, Channel: confirmation, At: w.Now})
	}
}

// confirmed: c's subscription is confirmed; its queue's head looks again.
func (s *Sim) confirmed(w *World, c *Client) {
	c.Listen = listenOn
	if c.Queued && c.PC == pcAcquire && !c.Done {
		s.queueSays(w, c, c.Q.Confirmed(at(w.Now)))
	}
}

// unheard: a message published now to client i is lost, since its process listens through a
// queue whose subscription is not yet confirmed.
func (s *Sim) unheard(w *World, i int) bool {
	_, queued := s.kind.queue()
	return queued && w.Clients[i].Listen != listenOn
}
