package simulate

import (
	"math/bits"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// redsyncDelete is redsync's release, a compare-and-delete on one master (redsync owns its
// scripts; this is the same logic). Extensions use the library's FencedRenew, which does what
// redsync's touch does: PEXPIRE while the key still holds the value.
const redsyncDelete = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

// redlockKind is NewRedlock (lock/redlock.go, on redsync): SET NX PX on each of three masters,
// held with a majority and validity left; otherwise given back on all of them, and the waiter
// sleeps until a majority could be free (the quorum-th shortest PTTL). With fence (mode
// redlock-fenced, WithFencingTokens) a won lock then draws a fencing token from a counter on the
// masters (lock/redlock_fence.go), and the resource refuses stale tokens as for fenced.
type redlockKind struct {
	base
	fence bool
}

func (redlockKind) masters() int   { return 3 }
func (redlockKind) freeNeeds() int { return 2 } // an attempt wins with a majority

// relook: a failed waiter sleeps the quorum-th shortest PTTL it read (core.QuorumFree), at most a
// lease: no message tells it of a release in another process.
func (redlockKind) relook(s *Sim) int64 { return ms(s.cfg.Lease) }

// downBound: a waiter that found no quorum able to free (masters that did not answer) looks
// again noQuorumPoll later, which may be that long after the masters came back.
func (redlockKind) downBound() int64   { return noQuorumPoll }
func (redlockKind) watchdog() bool     { return true }
func (redlockKind) wakes() bool        { return true }
func (k redlockKind) fenced() bool     { return k.fence }
func (k redlockKind) tokenKey() string { return script.RedlockTokenKey(lockName) }

func (k redlockKind) leftoverOK(key string) bool { return k.fence && key == k.tokenKey() }

// queue: a process's waiters wait in its queue; redlock rings it on its own releases, and the
// announcement of another process's release on any master rings it too.
func (redlockKind) queue() (core.QueueConfig, bool) { return queueConfig(true), true }

// acquire is one master's part of the attempt's round under way (core.Redlock, which decides the
// next round once all three answered). The SET round is redsync's: SET NX PX on each master, won
// with a majority and validity left, else given back on each (redsyncDelete, in a round of its own
// here, RedlockSet's second half).
func (k redlockKind) acquire(s *Sim, w *World, c *Client) {
	r := &c.Redlock
	if c.Over && r.Round == core.RedlockSet && c.Asked == 0 && !c.Undo {
		s.note(w, c.name(), "give up", "wait over")
		s.giveUp(w, c)
		return
	}
	if r.Round == core.RedlockSet && c.Asked == 0 && !c.Undo {
		*r, c.Start = core.NewRedlock(2, k.fence), w.Now
	}
	reply := int64(core.NoReply)
	switch {
	case c.Undo || r.Round == core.RedlockUnfence:
		s.script(w, c, c.I, "redsync-delete", redsyncDelete, []string{lockName}, c.Value)
	case r.Round == core.RedlockSet:
		if s.cmd(w, c, c.I, "SET", lockName, c.Value, "NX", "PX", itoa(ms(s.cfg.Lease))) == "OK" {
			reply = 1
		}
	case r.Round == core.RedlockPTTL:
		c.TTLs[c.I] = core.NoAnswer // a master down: never frees, as a key without TTL
		if d, ok := asInt(s.cmd(w, c, c.I, "PTTL", lockName)); ok {
			c.TTLs[c.I] = pttl(d)
		}
	case r.Round == core.RedlockRead:
		if v, ok := asInt(s.call(w, c, c.I, script.RedlockTokenReadCall(lockName, c.Value))); ok {
			reply = v
		}
	case r.Round == core.RedlockRaise:
		if v, ok := asInt(s.call(w, c, c.I, script.RedlockTokenRaiseCall(lockName, c.Value, r.Token))); ok {
			reply = v
		}
	}
	c.Replies[c.I] = reply
	if roundOver(c) {
		k.answered(s, w, c)
	}
}

// answered feeds a round's answers, all in, to the attempt, and acts on where it ends.
func (k redlockKind) answered(s *Sim, w *World, c *Client) {
	r := &c.Redlock
	switch {
	case c.Undo:
		c.Undo = false
		r.Set(false, k.heldHere(w, c))
	case r.Round == core.RedlockSet:
		lease := ms(s.cfg.Lease)
		won := majority(c.Replies) && lease-(w.Now-c.Start)-ms(core.Margin(s.cfg.Lease)) > 0
		if c.Undo = !won; won {
			r.Set(true, 0)
		}
	case r.Round == core.RedlockPTTL:
		r.PTTLs(c.TTLs[:])
	case r.Round == core.RedlockUnfence:
		announce(s, w, c) // the library's giveBack announces it as a release
		r.GaveBack()
	default:
		r.Answered(c.Replies[:])
	}
	c.Replies, c.TTLs = [3]int64{}, [3]time.Duration{} // read: a new round (a world is a state)
	switch r.Round {
	case core.RedlockHeld:
		token := r.Token
		c.Redlock = core.Redlock{}
		s.hold(w, c, token, c.Start, ms(s.cfg.Lease))
	case core.RedlockSlept:
		sleep := int64(5) // a quorum free: the library's poll delay, taken as 5 ms
		if r.Sleep >= 0 {
			sleep = ms(r.Sleep)
		}
		c.Redlock = core.Redlock{} // the next attempt's
		s.failed(w, c, sleep)
	}
}

// heldHere is how long a lease of c's process still holds the lock (the library's heldHere): the
// latest end among its holders' lives, 0 when none holds it.
func (redlockKind) heldHere(w *World, c *Client) time.Duration {
	var here time.Duration
	for _, o := range w.Clients {
		if o.Proc == c.Proc && o.ID != c.ID && o.Leased && !o.Lost && o.Inside {
			here = max(here, o.Life.Until().Sub(at(w.Now)))
		}
	}
	return here
}

// asks: every round of a redlock acquisition, renewal and release goes to the three masters at
// once (redsync's, and the library's PTTL reads and fencing rounds): the scheduler picks which
// master each step asks, among those not asked yet. The first step of a renewal round is the
// lease's tick, which asks m0; a waiter's first step of an attempt is a plain step until its
// queue has given it its turn.
func (redlockKind) asks(w *World, c *Client) uint8 {
	open := 7 &^ c.Asked
	switch {
	case c.PassOn != "":
		return 0
	case c.PC == pcAcquire && (c.Turn || c.Over) && !(c.Over && c.Redlock.Round == core.RedlockSet && c.Asked == 0 && !c.Undo):
		return open
	case c.PC == pcRelease, c.PC == pcWork && c.Renewing:
		return open
	}
	return 0
}

// roundOver marks master c.I asked in the round under way; once all three are, the round is over
// (and the next begins with none asked). Otherwise c.I is the first master not asked yet, which
// the next step asks unless the scheduler picks another (asks).
func roundOver(c *Client) bool {
	c.Asked |= 1 << c.I
	if c.Asked == 7 {
		c.Asked, c.I = 0, 0
		return true
	}
	c.I = bits.TrailingZeros8(^c.Asked)
	return false
}

// redlockChan is where a release is announced on every master (lock/redlock.go redlockChannel).
const redlockChan = "redlock__channel:" + lockName

// announce is the library's released: it rings its own process's queue, and PUBLISHes the
// release, "<process>:<value>", which the waiters of the other processes hear (a process ignores
// its own: its queue was rung). The library publishes on every master, and a process wakes on the
// first announcement to arrive: the others ring a queue already rung. So the simulator publishes
// on the first master that is up, one message a process; a lost one stands for all three lost.
func announce(s *Sim, w *World, c *Client) {
	s.rung(w, c)
	for m := range 3 {
		if s.cmd(w, c, m, "PUBLISH", redlockChan, "p"+itoa(int64(c.Proc))+":"+c.Value) != errDown {
			return
		}
	}
}

// route: a release's announcement goes to every process with a client still acquiring; deliver
// drops the publisher's own.
func (redlockKind) route(w *World, _ int, channel string) []int {
	return waitersOn(w, channel, redlockChan)
}

// deliver: another process's release rings the queue.
func (redlockKind) deliver(s *Sim, w *World, c *Client, m msg) {
	if !strings.HasPrefix(m.Payload, "p"+itoa(int64(c.Proc))+":") {
		s.ring(w, c, 0)
	}
}

// majority: at least two of the three masters answered 1 (set the key, or extended it).
func majority(replies [3]int64) bool {
	n := 0
	for _, v := range replies {
		if v == 1 {
			n++
		}
	}
	return n >= 2
}

// noQuorumPoll is how long a waiter sleeps when no quorum can ever free (lock/redlock.go,
// core.QuorumFree: masters that do not answer, or keys without TTL): it looks again every 2 s.
var noQuorumPoll = ms(core.NoQuorumPoll)

// pttl is a PTTL reply (ms) as go-redis gives it to the library: -1 and -2 as Redis says them.
func pttl(d int64) time.Duration {
	if d < 0 {
		return time.Duration(d)
	}
	return dur(d)
}

// renew extends on each master; a round that extends fewer than a majority fails (redsync's
// extend), tried again while the validity lasts.
func (k redlockKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	c.Replies[c.I] = 0
	if renewOutcome(s.call(w, c, c.I, script.FencedRenewCall(lockName, c.Value, ms(s.cfg.Lease)))) == renewOK {
		c.Replies[c.I] = 1
	}
	if !roundOver(c) {
		return false, renewOK
	}
	if !majority(c.Replies) {
		return true, renewFailed
	}
	return true, renewOK
}

func (k redlockKind) release(s *Sim, w *World, c *Client) {
	s.script(w, c, c.I, "redsync-delete", redsyncDelete, []string{lockName}, c.Value)
	if roundOver(c) {
		announce(s, w, c)
		s.released(w, c)
	}
}

func init() {
	kinds["redlock"] = redlockKind{}
	kinds["redlock-fenced"] = redlockKind{fence: true}
}
