package simulate

import (
	"slices"

	"github.com/seckill-lab/seckill/lock/script"
)

// redsyncDelete is redsync's release, a compare-and-delete on one master (redsync owns its
// scripts; this is the same logic). Extensions use the library's FencedRenew, which does what
// redsync's touch does: PEXPIRE while the key still holds the value.
const redsyncDelete = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

// redlockKind is NewRedlock (lock/redlock.go, on redsync): SET NX PX on each of three masters,
// held with a majority and validity left; otherwise given back on all of them, and the waiter
// sleeps until a majority could be free (the quorum-th shortest PTTL).
type redlockKind struct{ base }

func (redlockKind) masters() int   { return 3 }
func (redlockKind) watchdog() bool { return true }

func (k redlockKind) acquire(s *Sim, w *World, c *Client) {
	switch c.Sub {
	case 0:
		if c.I == 0 {
			if w.Now >= c.Deadline {
				s.note(w, c.name(), "give up", "wait over")
				s.giveUp(w, c)
				return
			}
			c.Start = w.Now
		}
		r := s.cmd(w, c, c.I, "SET", lockName, c.Value, "NX", "PX", itoa(ms(s.cfg.Lease)))
		c.Got[c.I] = r == "OK"
		if c.I++; c.I < 3 {
			return
		}
		c.I = 0
		n := 0
		for _, g := range c.Got {
			if g {
				n++
			}
		}
		lease := ms(s.cfg.Lease)
		if n >= 2 && lease-(w.Now-c.Start)-(lease/100+2) > 0 {
			s.enter(w, c, 0)
			return
		}
		c.Sub = 1
	case 1: // redsync gives a failed attempt back on every master
		s.script(w, c, c.I, "redsync-delete", redsyncDelete, []string{lockName}, c.Value)
		if c.I++; c.I == 3 {
			c.I, c.Sub, c.Got = 0, 2, [3]bool{}
		}
	case 2: // holderLeft: the PTTL on each master
		d, _ := asInt(s.cmd(w, c, c.I, "PTTL", lockName))
		c.TTLs[c.I] = d
		if c.I++; c.I < 3 {
			return
		}
		c.I, c.Sub = 0, 0
		c.sleep(min(w.Now+holderLeft(c.TTLs), c.Deadline))
	}
}

// holderLeft is the library's sleep after a failed attempt: the quorum-th shortest PTTL (a
// master without the key counts 0, a key without TTL or a master down never frees).
func holderLeft(ttls [3]int64) int64 {
	const never = int64(1) << 62
	v := make([]int64, 3)
	for i, d := range ttls {
		switch {
		case d == -1:
			v[i] = never
		case d < 0:
			v[i] = 0
		default:
			v[i] = d
		}
	}
	slices.Sort(v)
	switch v[1] {
	case 0:
		return 5 // the poll delay
	case never:
		return 2000
	}
	return v[1]
}

// renew extends on each master; a round that extends fewer than a majority loses the lock.
func (k redlockKind) renew(s *Sim, w *World, c *Client) bool {
	if n, _ := asInt(s.script(w, c, c.I, "FencedRenew", script.FencedRenew, []string{lockName}, c.Value, itoa(ms(s.cfg.Lease)))); n == 1 {
		c.Got[c.I] = true
	} else {
		c.Got[c.I] = false
	}
	if c.I++; c.I < 3 {
		return false
	}
	c.I = 0
	n := 0
	for _, g := range c.Got {
		if g {
			n++
		}
	}
	if n < 2 {
		c.Lost = true
	}
	return true
}

func (k redlockKind) release(s *Sim, w *World, c *Client) {
	s.script(w, c, c.I, "redsync-delete", redsyncDelete, []string{lockName}, c.Value)
	if c.I++; c.I == 3 {
		s.released(w, c)
	}
}

func init() { kinds["redlock"] = redlockKind{} }
