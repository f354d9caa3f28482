package simulate

import (
	"slices"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// The waiting of the library's kinds but fair: each acquisition waits in its process's queue for
// the key, lock/core's Queue, the one the library's handoff drives. The queue decides when the
// client tries, how long it sleeps after a failed attempt, that it looks again after subscribing,
// that a ring wakes it, and when its wait is over. A waiter is named in it by its client's ID;
// with one client per process it is the only waiter in its queue. A queue left empty is made anew
// by the next waiter (the library's lingers with its subscription, which the process keeps here).
// Its process's subscription is confirmed by a message of its own, which the scheduler delivers
// like any other: at once, or late when a pub/sub fault delays it.

// proc is one process's state, shared by its clients (Config.PerProcess): the key's queue, the
// subscription to what rings it (Listens: asked for by the queue, then confirmed by a message of
// its own, and kept for the process's life; until it is confirmed, what is published to the
// process is not heard), and for the line kinds the process's lock/core.Line. A multilock's
// process has a queue and a subscription for each part (its master), as each part is a Locker
// of its own; every other kind has one, the first.
type proc struct {
	Qs      [3]core.Queue
	Listens [3]listen
	Line    core.Line
}

// part is the queue of its process that c waits in: its part's (c.I, the master it asks) for
// multilock, its own for fair (each fair waiter is the one waiter of its queue: c's place among
// its process's clients), else the one.
func (s *Sim) part(c *Client) int {
	if _, fair := s.kind.(fairKind); fair {
		return (c.ID - 1) % s.cfg.PerProcess
	}
	if s.kind.perMaster() && c.I < 3 {
		return c.I
	}
	return 0
}

// proc is c's process.
func (w *World) proc(c *Client) *proc { return &w.Procs[c.Proc-1] }

// mates are the clients of c's process, c among them.
func (w *World) mates(c *Client) []Client {
	i := slices.IndexFunc(w.Clients, func(d Client) bool { return d.Proc == c.Proc })
	j := i
	for j < len(w.Clients) && w.Clients[j].Proc == c.Proc {
		j++
	}
	return w.Clients[i:j]
}

// mailbox is the index of the client that receives its process's messages: the first of it.
func (w *World) mailbox(c *Client) int { return w.mates(c)[0].ID - 1 }

// queueConfig is the library's queue of a kind that listens to its key's releases: sure is
// whether every release it must hear rings it before the subscription is confirmed (handoff's
// localRing: lua, fenced and redlock ring their own).
func queueConfig(sure bool) core.QueueConfig {
	return core.QueueConfig{Listens: true, SureRing: sure, Linger: core.Linger, ConfirmWait: core.ConfirmWait}
}

// waitIn starts c's wait in its process's queue (an acquisition, or a multilock's part).
func (s *Sim) waitIn(w *World, c *Client, cfg core.QueueConfig) {
	part := s.part(c)
	q := &w.proc(c).Qs[part]
	if q.Empty() {
		*q = core.NewQueue(cfg)
	}
	c.Queued, c.Turn, c.Over = true, false, false
	s.queueSays(w, c, part, q.Enter(at(w.Now), uint64(c.ID), at(c.Deadline)))
}

// queueSays does what queue part of c's process answered, for each of its waiters: it tries now
// (Turn), its wait is over (Over: its next step leaves), or it sleeps until the queue's timer or
// a ring.
func (s *Sim) queueSays(w *World, c *Client, part int, r core.QueueReady) {
	if r.Subscribe {
		r = s.subscribe(w, c, part, r)
	}
	mates := w.mates(c)
	for i := range mates {
		d := &mates[i]
		if !d.Queued || d.PC != pcAcquire || s.part(d) != part {
			continue
		}
		switch {
		case slices.Contains(r.GiveUp, uint64(d.ID)):
			d.Over, d.Turn, d.Waiting = true, false, false
		case r.Try == uint64(d.ID):
			d.Turn, d.Waiting = true, false
		case !r.Wake.IsZero() && !d.Turn && !d.Over:
			d.sleep(msAt(r.Wake))
		}
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
	part := s.part(c)
	s.queueSays(w, c, part, w.proc(c).Qs[part].Failed(at(w.Now), uint64(c.ID), d))
}

// ride is the library's Locker.ride after an attempt that no master answered (a master down
// refuses the connection, so nothing ran): the waiter is out of its queue (leave), and pauses
// before it enters the queue again (core.RidePause: 10 ms, doubling to 200 ms), or gives up when
// no more than the pause is left of its wait (core.Rides).
func (s *Sim) ride(w *World, c *Client) {
	s.leave(w, c)
	pause := core.RidePause(c.Rides)
	if !core.Rides(dur(c.Deadline-w.Now), pause) {
		s.note(w, c.name(), "give up", "no answer, and no more than a pause left of the wait")
		s.giveUp(w, c)
		return
	}
	c.Rides++
	c.Riding = true
	c.sleep(w.Now + ms(pause))
}

// rideOn is the step after a ride's pause: the waiter enters its queue again, with what is left
// of its wait.
func (s *Sim) rideOn(w *World, c *Client) {
	if k, ok := s.kind.(lineKind); ok {
		k.rideAgain(s, w, c)
	}
	c.Riding, c.Sub, c.I = false, 0, 0
	s.note(w, c.name(), "try again", "the pause after no answer is over")
	if cfg, ok := s.kind.queue(); ok {
		s.waitIn(w, c, cfg)
	}
}

// leave takes c out of its queue, wherever it stands (the library's handoff.leave).
func (s *Sim) leave(w *World, c *Client) {
	if !c.Queued {
		return
	}
	part := s.part(c)
	c.Queued, c.Turn = false, false
	s.queueSays(w, c, part, w.proc(c).Qs[part].Leave(at(w.Now), uint64(c.ID)))
}

// rideBound is the longest a waiter that met a master down may sleep after it came back: its
// ride's longest pause.
var rideBound = ms(core.RideLongest)

// won tells c's queue its attempt won: c leaves it, and the next waiter is its head, asleep
// until a ring or the kind's heldHint.
func (s *Sim) won(w *World, c *Client) {
	c.Turn, c.Queued = false, false
	part := s.part(c)
	s.queueSays(w, c, part, w.proc(c).Qs[part].Held(at(w.Now), uint64(c.ID), at(w.Now+s.kind.heldHint(s, c))))
}

// ring is a release heard by c's process, on queue part.
func (s *Sim) ring(w *World, c *Client, part int) { s.ringBut(w, c, part, 0) }

// rung is a release made by c, which rings its process's queue when another client waits there.
func (s *Sim) rung(w *World, c *Client) { s.ringBut(w, c, s.part(c), c.ID) }

// ringBut rings queue part of c's process when a client of it but the one with ID but waits there.
func (s *Sim) ringBut(w *World, c *Client, part, but int) {
	if s.waiting(w, c, part, but) {
		s.queueSays(w, c, part, w.proc(c).Qs[part].Ring(at(w.Now)))
	}
}

// waiting: a client of c's process but the one with ID but waits in its queue part.
func (s *Sim) waiting(w *World, c *Client, part, but int) bool {
	return slices.ContainsFunc(w.mates(c), func(d Client) bool {
		return d.ID != but && d.Queued && d.PC == pcAcquire && !d.Done && s.part(&d) == part
	})
}

// queueTurn is the queue's part of an acquisition's step: its timer, when the client wakes on
// it. It reports whether the kind's step is due (the client's turn to try, or its wait is over).
func (s *Sim) queueTurn(w *World, c *Client) bool {
	if !c.Queued || c.Turn || c.Over {
		return true
	}
	part := s.part(c)
	s.queueSays(w, c, part, w.proc(c).Qs[part].Tick(at(w.Now)))
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
func (s *Sim) subscribe(w *World, c *Client, part int, r core.QueueReady) core.QueueReady {
	if w.proc(c).Listens[part] == listenOn {
		return w.proc(c).Qs[part].Confirmed(at(w.Now))
	}
	s.listen(w, c, part)
	return r
}

// listen starts subscription part of c's process unless it has it: its confirmation is on its way.
func (s *Sim) listen(w *World, c *Client, part int) {
	if p := w.proc(c); p.Listens[part] == listenNone {
		p.Listens[part] = listenAsked
		w.Msgs = append(w.Msgs, msg{To: w.mailbox(c), Channel: confirmation, At: w.Now, Part: part})
	}
}

// confirmed: subscription part of c's process is confirmed; its queue's head looks again.
func (s *Sim) confirmed(w *World, c *Client, part int) {
	w.proc(c).Listens[part] = listenOn
	if s.waiting(w, c, part, 0) {
		s.queueSays(w, c, part, w.proc(c).Qs[part].Confirmed(at(w.Now)))
	}
}

// unheard: a message published now to client i's process on queue part is lost, since that
// queue's subscription is not yet confirmed.
func (s *Sim) unheard(w *World, i, part int) bool {
	cfg, queued := s.kind.queue()
	return queued && cfg.Listens && w.proc(&w.Clients[i]).Listens[part] != listenOn
}
