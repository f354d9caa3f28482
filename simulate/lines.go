package simulate

import (
	"strconv"
	"strings"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// lineKind is NewLua (fenced false) and NewFenced (fenced true): the waiter line of
// lock/line.go, one waiter per process, with the library's scripts and arguments.
type lineKind struct {
	base
	tokens bool
}

// lostGrant is the library's lostGrantBound (lock/core): a queued head looks again at least this
// often.
var lostGrant = ms(core.LostGrantBound)

func (k lineKind) fenced() bool    { return k.tokens }
func (lineKind) relook(*Sim) int64 { return relookLine }
func (k lineKind) watchdog() bool  { return k.tokens }

func (k lineKind) keys() []string {
	tok := lockName
	if k.tokens {
		tok = lockName + ":token"
	}
	return []string{lockName, named(script.LinePrefix), named(script.LineWaitersPrefix), tok}
}

func (k lineKind) flag() string {
	if k.tokens {
		return "1"
	}
	return "0"
}

// grantTTL is the library's (lock/core.GrantTTL): how long a lock handed to a waiter lives
// before its new holder pushes it out to its lease.
func (k lineKind) grantTTL(s *Sim) int64 {
	return ms(core.GrantTTL(s.cfg.Lease, s.cfg.Wait, core.MaxGrantTTL))
}

func (k lineKind) leftoverOK(key string) bool { return k.tokens && key == lockName+":token" }

// queue: the line's waiters wait in their process's queue; a release here rings it itself.
func (lineKind) queue() (core.QueueConfig, bool) { return queueConfig(true), true }

func (k lineKind) acquire(s *Sim, w *World, c *Client) {
	switch {
	case c.Over:
		// Out of the line: the release script takes the value out of the Redis line, and passes
		// the lock on if it was handed to it meanwhile.
		k.releaseValue(s, w, c, c.Value)
		s.giveUp(w, c)
	case c.Granted:
		s.note(w, c.name(), "take the lock handed over", "token "+itoa(c.GrantTok))
		ttl := min(ms(s.cfg.Lease), k.grantTTL(s))
		s.handedOver(w, c, c.GrantTok, ttl, func() any {
			return s.script(w, c, 0, "FencedRenew", script.FencedRenew, []string{lockName}, c.Value, itoa(ms(s.cfg.Lease)))
		})
	default:
		k.try(s, w, c)
	}
}

// try is one run of the acquire script (line.go waitLine.try).
func (k lineKind) try(s *Sim, w *World, c *Client) {
	c.Sent = w.Now
	reply := s.script(w, c, 0, "LineAcquire", script.LineAcquire, k.keys(), c.Value, itoa(w.Now), k.flag(),
		itoa(ms(s.cfg.Lease)), itoa(c.Deadline), itoa(k.grantTTL(s)))
	r, _ := reply.([]any)
	if len(r) == 2 {
		if held, _ := asInt(r[0]); held == 1 {
			tok, _ := asInt(r[1])
			s.hold(w, c, tok, w.Now, ms(s.cfg.Lease))
			return
		}
	}
	d := int64(-1)
	if len(r) == 2 {
		d, _ = asInt(r[1])
	} else if reply != errDown {
		s.unexpected(w, c, "LineAcquire", reply)
	}
	s.failed(w, c, ms(core.LineSleep(dur(d), dur(k.grantTTL(s)), core.LostGrantBound, true)))
}

func (k lineKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	return true, renewOutcome(s.script(w, c, 0, "FencedRenew", script.FencedRenew, []string{lockName}, c.Value, itoa(ms(s.cfg.Lease))))
}

func (k lineKind) release(s *Sim, w *World, c *Client) {
	k.releaseValue(s, w, c, c.Value)
	s.released(w, c)
}

// releaseValue runs the release script for value, with no next waiter in this process.
func (k lineKind) releaseValue(s *Sim, w *World, c *Client, value string) {
	s.script(w, c, 0, "LineRelease", script.LineRelease, k.keys(), value, itoa(w.Now), k.flag(),
		"p"+strconv.Itoa(c.ID)+":", script.GrantChannelPrefix, "", "0", "0", "0", "0")
}

func (k lineKind) passOn(s *Sim, w *World, c *Client) {
	v := c.PassOn
	c.PassOn = ""
	k.releaseValue(s, w, c, v)
}

// route: a grant goes to the process its channel names (script.GrantChannelPrefix + "p<id>").
func (k lineKind) route(w *World, _ int, channel string) []int {
	id, ok := strings.CutPrefix(channel, script.GrantChannelPrefix+"p")
	n, err := strconv.Atoi(id)
	if !ok || err != nil || n < 1 || n > len(w.Clients) || w.Clients[n-1].Crashed {
		return nil
	}
	return []int{n - 1}
}

// deliver: a grant "<lock>\n<value>\n<token>" for the waiting acquisition wakes it holding the
// lock; one for a value this process does not wait with nor hold is passed on (line.go heard).
func (k lineKind) deliver(s *Sim, w *World, c *Client, m msg) {
	parts := strings.SplitN(m.Payload, "\n", 3)
	if len(parts) != 3 {
		return
	}
	tok, _ := strconv.ParseInt(parts[2], 10, 64)
	switch {
	case c.PC == pcAcquire && !c.Done && c.Value == parts[1]:
		c.Granted, c.GrantTok = true, tok
		s.ring(w, c)
	case c.Inside && c.Value == parts[1]:
	default:
		c.PassOn = parts[1]
	}
}

func init() {
	kinds["lua"] = lineKind{}
	kinds["fenced"] = lineKind{tokens: true}
}

func (lineKind) wakes() bool { return true }
