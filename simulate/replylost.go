package simulate

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/seckill-lab/seckill/lock/core"
)

// A lost reply (FaultReplyLost): an attempt ran, and its reply never came back on a connection
// that broke. The library makes the attempt again in place (brokenRetry), with the same owner or
// value, and a win gives back a hold the lost attempt counted (lock/orphan.go).

// retryInPlace: c's attempt got no answer. One whose reply was lost on a connection that broke
// is made again in place, at the head of its queue, after core.BrokenRetry's pause (the library's
// brokenRetry); it reports whether it will be. A master that did not answer, or too many lost
// replies in a row, fail the acquisition, which rides.
func (s *Sim) retryInPlace(w *World, c *Client) bool {
	lost := c.ReplyLost
	c.ReplyLost = false
	pause, ok := core.BrokenRetry(c.Broken, dur(c.Deadline-w.Now))
	if !lost || !ok {
		return false
	}
	c.Broken++
	c.sleep(w.Now + ms(pause))
	return true
}

// settleHolds: c won on master m after an attempt there whose reply was lost, and re-entered what
// that one took. It gives back the holds its field counts beyond its own one (core.ExtraHolds),
// as the library's won does (lock/orphan.go).
func (s *Sim) settleHolds(w *World, c *Client, m int, h core.Hold, a core.Ask) {
	c.Orphans &^= 1 << m
	r := s.cmd(w, c, m, "HGET", a.Key, h.Field(a))
	v, _ := r.(string)
	n, _ := strconv.Atoi(v)
	for range core.ExtraHolds(n, 1) {
		s.call(w, c, m, h.Release(a))
	}
}

// giveBackOrphans: c's acquisition ends without the lock; what its attempts whose replies were
// lost took is given back (the library's orphans.giveBack), one release on each such master.
func (s *Sim) giveBackOrphans(w *World, c *Client) {
	h, ok := s.kind.counted(c)
	for m := range s.kind.masters() {
		if ok && c.Orphans&(1<<m) != 0 {
			s.call(w, c, m, h.Release(s.ask(w, c)))
		}
	}
	c.Orphans = 0
}

// checkReleased: c's release has run; on every master that answers, its field is gone from the
// lock's hash, or a hold nobody will give back keeps the lock until its lease ends.
func (s *Sim) checkReleased(w *World, c *Client) {
	h, ok := s.kind.counted(c)
	if !ok || w.Violation != "" {
		return
	}
	field := h.Field(s.ask(w, c))
	for m, mm := range w.Masters {
		if mm.DownUntil > w.Now {
			continue
		}
		for _, k := range mm.Data {
			if i := slices.Index(k.Hash, field); k.Key == lockName && i >= 0 && i%2 == 0 {
				w.Violation = fmt.Sprintf("held after release: %s's field still counts %s on m%d after its release", c.acq(), k.Hash[i+1], m)
				return
			}
		}
	}
}
