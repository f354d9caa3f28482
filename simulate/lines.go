package simulate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// lineKind is NewLua (fenced false) and NewFenced (fenced true): the waiter line of
// lock/line.go, Config.PerProcess waiters to a process, with the library's scripts and arguments,
// and its decisions taken by the library's own lock/core.Line.
type lineKind struct {
	base
	tokens bool
}

// lostGrant is the library's core.LostGrantBound: a queued head looks again at least this
// often.
var lostGrant = ms(core.LostGrantBound)

func (k lineKind) fenced() bool    { return k.tokens }
func (lineKind) relook(*Sim) int64 { return relookLine }

// downBound: an attempt a master down refused makes the acquisition ride, pausing up to
// rideBound before it enters the line again.
func (lineKind) downBound() int64 { return rideBound }
func (k lineKind) watchdog() bool { return k.tokens }

func (k lineKind) keys() []string {
	tok := lockName
	if k.tokens {
		tok = lockName + ":token"
	}
	return script.LineKeys(lockName, tok)
}

// grantTTL is the library's (lock/core.GrantTTL): how long a lock handed to a waiter lives
// before its new holder pushes it out to its lease.
func (k lineKind) grantTTL(s *Sim) int64 {
	return ms(core.GrantTTL(s.cfg.Lease, s.cfg.Wait, core.MaxGrantTTL))
}

func (k lineKind) leftoverOK(key string) bool { return k.tokens && key == lockName+":token" }

// queue: the line's waiters wait in their process's queue; a release here rings it itself.
func (lineKind) queue() (core.QueueConfig, bool) { return queueConfig(true), true }

// wait starts the acquisition's wait in its process's line (lock/core.Line), before its queue, as
// the library's wait enters it: a release here may pass the lock to it from then on.
func (k lineKind) wait(s *Sim, w *World, c *Client) {
	w.proc(c).Line.Enter(at(w.Now), lockName, c.Value, s.cfg.Lease, dur(k.grantTTL(s)), at(c.Deadline))
}

func (k lineKind) acquire(s *Sim, w *World, c *Client) {
	if c.Sub == 0 {
		s.listen(w, c, 0) // the library subscribes to its grant channel as its first waiter enters
		c.Sub = 1
	}
	line := &w.proc(c).Line
	if c.Over {
		// Out of the line: the release script takes the value out of the Redis line, and passes
		// the lock on if it was handed to it meanwhile.
		if passOn, leave := line.Exit(at(w.Now), lockName, c.Value, false); passOn || leave {
			k.releaseValue(s, w, c, c.Value)
		}
		s.giveUp(w, c)
		return
	}
	subscribed := w.proc(c).Listens[0] == listenOn
	look := line.Look(at(w.Now), c.Value, subscribed)
	switch {
	case look.Won:
		s.note(w, c.name(), "take the lock handed over", "token "+itoa(look.Win.Token))
		line.Exit(at(w.Now), lockName, c.Value, true)
		c.Sent = msAt(look.Win.Since)
		ttl := ms(s.cfg.Lease) // the library's acquire: a lock handed over short lives its grant TTL
		if look.Win.Short {
			ttl = min(ttl, ms(look.Win.GrantTTL))
		}
		s.handedOver(w, c, look.Win.Token, ttl, func() any {
			return s.call(w, c, 0, script.FencedRenewCall(lockName, c.Value, ms(s.cfg.Lease)))
		})
	case look.Wait > 0:
		// Queued in Redis, or just tried: its grant or its bound comes next, not an attempt.
		s.note(w, c.name(), "look: no attempt before its bound", fmt.Sprintf("+%dms", ms(look.Wait)))
		s.failed(w, c, ms(look.Wait))
	default:
		k.try(s, w, c, look, subscribed)
	}
}

// try is one run of the acquire script (line.go waitLine.attempt): queued in the Redis line only
// once the process hears grants.
func (k lineKind) try(s *Sim, w *World, c *Client, look core.LineLook, subscribed bool) {
	c.Sent = w.Now
	deadline := int64(0)
	if !look.QueueUntil.IsZero() {
		deadline = msAt(look.QueueUntil)
	}
	reply := s.call(w, c, 0, script.Call{Script: "LineAcquire", Keys: k.keys(),
		Args: script.LineAcquireArgs(nil, c.Value, w.Now, script.Flag(k.tokens), ms(s.cfg.Lease), deadline, ms(look.GrantTTL))})
	line := &w.proc(c).Line
	if c.LoseReply && reply != errDown {
		// It ran; its reply is lost on a connection that broke (it may have queued, or taken the
		// lock): made again in place with the same value, which the script answers alike
		// (brokenRetry), or, too many in a row, the acquisition rides.
		c.LoseReply, c.ReplyLost, c.Orphans = false, true, 1
		s.amend(w, " (its reply lost)")
		if !s.retryInPlace(w, c) {
			k.ride(s, w, c)
		}
		return
	}
	if reply != errDown {
		c.Broken = 0 // answered
	}
	r, _ := reply.([]any)
	held, n, ok := script.LineAcquired(r)
	if held && ok {
		line.Exit(at(w.Now), lockName, c.Value, true)
		s.hold(w, c, n, w.Now, ms(s.cfg.Lease))
		return
	}
	if reply == errDown {
		line.Unsent(c.Value) // refused: nothing ran
		k.ride(s, w, c)
		return
	}
	d := n
	if !ok {
		d = -1
		s.unexpected(w, c, "LineAcquire", reply)
	}
	s.failed(w, c, ms(line.Tried(at(w.Now), c.Value, dur(d), core.LostGrantBound, subscribed)))
}

// ride: no master answered the attempt (a refused connection: nothing ran). The library's wait
// exits the process's line, gives the value's entry back in the background (an earlier attempt
// may have queued it in Redis, or a release handed it the lock), and the acquisition rides
// (Locker.ride), entering the line again after the pause with a new value (rideAgain).
func (k lineKind) ride(s *Sim, w *World, c *Client) {
	if passOn, leave := w.proc(c).Line.Exit(at(w.Now), lockName, c.Value, false); passOn || leave {
		s.giveBackLater(w, c, c.Value, c.Deadline)
	}
	s.ride(w, c)
}

// giveBack: the release script takes value out of the Redis line, and passes on a lock handed to
// it (line.go exit's give-back); answered unless the master is down.
func (k lineKind) giveBack(s *Sim, w *World, c *Client, value string) bool {
	return k.releaseValue(s, w, c, value)
}

// rideAgain: after a ride's pause, a new value enters the line (Locker.ride runs the kind's
// Acquire again, which draws one).
func (k lineKind) rideAgain(s *Sim, w *World, c *Client) {
	c.Value = fmt.Sprintf("p%d:c%d.r%d.%d", c.Proc, c.ID, c.Round, c.Rides)
	k.wait(s, w, c)
}

func (k lineKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	return true, renewOutcome(s.call(w, c, 0, script.FencedRenewCall(lockName, c.Value, ms(s.cfg.Lease))))
}

func (k lineKind) release(s *Sim, w *World, c *Client) {
	k.releaseValue(s, w, c, c.Value)
	s.released(w, c)
}

// releaseValue is the library's release of value (line.go release): the release script, given
// the process's next waiter when core.Line.Next names one (the head of its queue), then its reply
// told to the process's line (Forget, Released). A lock handed to a waiter of this process is
// delivered at once (the script publishes only to the others), and the process's queue is rung
// (the release's own client, which may wait again, is not rung by it: a process of one client
// hears no release of its own).
func (k lineKind) releaseValue(s *Sim, w *World, c *Client, value string) (answered bool) {
	p := w.proc(c)
	head := ""
	if id, ok := p.Qs[0].Head(); ok {
		head = w.Clients[id-1].Value
	}
	next, ok := p.Line.Next(lockName, value, head, head != "", p.Listens[0] == listenOn)
	var after script.LineNext
	if ok {
		after = script.LineNext{Value: next.Value, Deadline: msAt(next.Deadline), Grant: ms(next.GrantTTL), Lease: max(ms(next.Lease), 1), Before: next.Before}
	}
	mine := "p" + strconv.Itoa(c.Proc) + ":"
	reply := s.call(w, c, 0, script.Call{Script: "LineRelease", Keys: k.keys(),
		Args: script.LineReleaseArgs(nil, value, w.Now, script.Flag(k.tokens), mine, after)})
	r, _ := reply.([]any)
	if got, ok := script.ReadLineRelease(r); ok && got.Code >= 2 {
		p.Line.Released(at(w.Now), lockName, value, got.Cohort, next.Value, got.To)
		if strings.HasPrefix(got.To, mine) {
			k.granted(s, w, c, got.To, got.Token, got.Code == 2, at(w.Now))
		}
		s.rung(w, c)
		return true
	}
	if p.Line.Forget(lockName, value) {
		s.rung(w, c)
	}
	return reply != errDown
}

func (k lineKind) passOn(s *Sim, w *World, c *Client) {
	v := c.PassOn
	c.PassOn = ""
	k.releaseValue(s, w, c, v)
}

// route: a grant goes to the process its channel names (script.GrantChannelPrefix + "p<n>").
func (k lineKind) route(w *World, _ int, channel string) []int {
	id, ok := strings.CutPrefix(channel, script.GrantChannelPrefix+"p")
	n, err := strconv.Atoi(id)
	i := slices.IndexFunc(w.Clients, func(c Client) bool { return c.Proc == n })
	if !ok || err != nil || i < 0 {
		return nil
	}
	return []int{i}
}

// deliver: a grant "<lock>\n<value>\n<token>" is the process line's to judge (granted).
func (k lineKind) deliver(s *Sim, w *World, c *Client, m msg) {
	parts := strings.SplitN(m.Payload, "\n", 3)
	if len(parts) != 3 {
		return
	}
	tok, _ := strconv.ParseInt(parts[2], 10, 64)
	k.granted(s, w, c, parts[1], tok, true, time.Time{})
}

// granted: a release handed the lock to value, a waiter of c's process (core.Line.Granted):
// the waiting acquisition's wakes it holding the lock; one for a value this process neither
// waits with nor holds is passed on (line.go deliver, heard).
func (k lineKind) granted(s *Sim, w *World, c *Client, value string, tok int64, short bool, since time.Time) {
	ring, passOn := w.proc(c).Line.Granted(lockName, value, tok, short, since)
	if ring {
		s.ring(w, c, 0)
	}
	if passOn {
		c.PassOn = value
	}
}

func init() {
	kinds["lua"] = lineKind{}
	kinds["fenced"] = lineKind{tokens: true}
}

func (lineKind) wakes() bool { return true }
