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

// The steps of a redlock acquisition (Client.Sub).
const (
	rlSet      = iota // SET NX PX on each master
	rlGiveBack        // a failed attempt given back on each master (redsync)
	rlPTTL            // holderLeft: PTTL on each master
	rlRead            // fencing, round 1: RedlockTokenRead on each master
	rlRaise           // fencing, round 2: RedlockTokenRaise on each master
	rlUnfenced        // a round without a majority: the lock given back on each master
)

func (redlockKind) masters() int   { return 3 }
func (redlockKind) freeNeeds() int { return 2 } // an attempt wins with a majority

// relook: a failed waiter sleeps the quorum-th shortest PTTL it read (holderLeft), at most a
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

func (k redlockKind) acquire(s *Sim, w *World, c *Client) {
	if c.Over && c.Sub == rlSet && c.Asked == 0 {
		s.note(w, c.name(), "give up", "wait over")
		s.giveUp(w, c)
		return
	}
	switch c.Sub {
	case rlSet:
		k.set(s, w, c)
	case rlGiveBack: // redsync gives a failed attempt back on every master
		s.script(w, c, c.I, "redsync-delete", redsyncDelete, []string{lockName}, c.Value)
		if roundOver(c) {
			c.Sub, c.Got = rlPTTL, [3]bool{}
		}
	case rlPTTL: // holderLeft: the PTTL on each master
		c.TTLs[c.I] = core.NoAnswer // a master down: never frees, as a key without TTL
		if d, ok := asInt(s.cmd(w, c, c.I, "PTTL", lockName)); ok {
			c.TTLs[c.I] = pttl(d)
		}
		if !roundOver(c) {
			return
		}
		c.Sub = rlSet
		s.failed(w, c, holderLeft(c.TTLs))
	case rlRead, rlRaise:
		k.drawToken(s, w, c)
	case rlUnfenced: // the library's giveBack; the attempt counts as lost, retried after the poll delay
		s.script(w, c, c.I, "redsync-delete", redsyncDelete, []string{lockName}, c.Value)
		if roundOver(c) {
			c.Sub, c.Got = rlSet, [3]bool{}
			announce(s, w, c) // the library's giveBack announces it as a release
			s.failed(w, c, 5)
		}
	}
}

// set is one SET NX PX of an attempt; after the third, the attempt is won (a majority, validity
// left) or given back.
func (k redlockKind) set(s *Sim, w *World, c *Client) {
	if c.Asked == 0 {
		c.Start = w.Now
	}
	r := s.cmd(w, c, c.I, "SET", lockName, c.Value, "NX", "PX", itoa(ms(s.cfg.Lease)))
	c.Got[c.I] = r == "OK"
	if !roundOver(c) {
		return
	}
	lease := ms(s.cfg.Lease)
	switch {
	case majority(c.Got) && lease-(w.Now-c.Start)-(lease/100+2) > 0 && k.fence:
		c.Sub, c.Token, c.Got = rlRead, 0, [3]bool{}
	case majority(c.Got) && lease-(w.Now-c.Start)-(lease/100+2) > 0:
		s.hold(w, c, 0, c.Start, lease)
	default:
		c.Sub = rlGiveBack
	}
}

// drawToken is one master's part of a fencing round (lock/redlock_fence.go drawToken): the read
// counts where the lock is still this acquisition's (reply >= 0) and keeps the largest counter;
// the token is that plus one, raised where the lock is still ours. Either round without a
// majority gives the lock back.
func (k redlockKind) drawToken(s *Sim, w *World, c *Client) {
	if c.Sub == rlRead {
		v, ok := asInt(s.call(w, c, c.I, script.RedlockTokenReadCall(lockName, c.Value)))
		if c.Got[c.I] = ok && v >= 0; c.Got[c.I] {
			c.Token = max(c.Token, v)
		}
	} else {
		v, _ := asInt(s.call(w, c, c.I, script.RedlockTokenRaiseCall(lockName, c.Value, c.Token)))
		c.Got[c.I] = v == 1
	}
	if !roundOver(c) {
		return
	}
	switch {
	case !majority(c.Got):
		c.Sub = rlUnfenced
	case c.Sub == rlRead:
		c.Sub, c.Token, c.Got = rlRaise, c.Token+1, [3]bool{}
	default:
		s.hold(w, c, c.Token, c.Start, ms(s.cfg.Lease))
	}
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
	case c.PC == pcAcquire && (c.Turn || c.Over) && !(c.Over && c.Sub == rlSet && c.Asked == 0):
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

// majority: at least two of the three masters.
func majority(got [3]bool) bool {
	n := 0
	for _, g := range got {
		if g {
			n++
		}
	}
	return n >= 2
}

// noQuorumPoll is how long a waiter sleeps when no quorum can ever free (lock/redlock.go
// holderLeft: masters that do not answer, or keys without TTL): it looks again every 2 s.
var noQuorumPoll = ms(core.NoQuorumPoll)

// holderLeft is the library's sleep after a failed attempt (core.QuorumFree), its poll delay when
// a quorum is free taken as 5 ms.
func holderLeft(ttls [3]time.Duration) int64 {
	if left := core.QuorumFree(ttls[:], 2); left >= 0 {
		return ms(left)
	}
	return 5
}

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
	c.Got[c.I] = renewOutcome(s.call(w, c, c.I, script.FencedRenewCall(lockName, c.Value, ms(s.cfg.Lease)))) == renewOK
	if !roundOver(c) {
		return false, renewOK
	}
	if !majority(c.Got) {
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
