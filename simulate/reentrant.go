package simulate

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// Keys and channels of Redisson's RLock layout and the library's line (the one of lua and fenced,
// lines.go) with its nomination channels.
var (
	unlockChannel  = script.UnlockChannel(lockName)
	nominationPref = script.NominationKeys(lockName)[4]
)

// reentrantKind is NewReentrant (lock/reentrant.go, lock/nomination.go): Redisson's acquire
// script, which queues the waiter's process in the line when it fails; a release nominates the
// first process in line.
type reentrantKind struct{ base }

func (reentrantKind) watchdog() bool    { return true }
func (reentrantKind) relook(*Sim) int64 { return relookLine }

// nomID is the line's member for c's process (the library's nominator id, one a Locker).
func nomID(c *Client) string { return "n" + strconv.Itoa(c.Proc) }

// queue: a process's waiters wait in its queue, which hears Redisson's unlock message and the
// process's nominations.
func (reentrantKind) queue() (core.QueueConfig, bool) { return queueConfig(false), true }

func (k reentrantKind) acquire(s *Sim, w *World, c *Client) {
	if c.Over {
		if !s.waiting(w, c, 0, c.ID) {
			// The last waiter of the process gives up: out of the line (nominator.pass).
			s.call(w, c, 0, script.RLockPassCall(lockName, w.Now, nomID(c), false))
		}
		s.giveUp(w, c)
		return
	}
	a := s.ask(w, c)
	a.Line, a.Until = nomID(c), time.UnixMilli(c.Deadline)
	switch t, answered := s.attempt(w, c, 0, core.RLock, a); {
	case t.Held:
		s.hold(w, c, 0, w.Now, ms(s.cfg.Lease))
	case !answered && s.retryInPlace(w, c):
	case !answered:
		s.ride(w, c)
	default:
		s.failed(w, c, ms(core.QueuedSleep(t.Wait, core.LostGrantBound)))
	}
}

// downBound: a waiter that met the master down pauses up to rideBound before it looks again.
func (reentrantKind) downBound() int64 { return rideBound }

func (k reentrantKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	return true, renewHash(s, w, c, 0)
}

// renewHash is one renewal of the holder's field of Redisson's hash on master m.
func renewHash(s *Sim, w *World, c *Client, m int) renewal {
	return renewOutcome(s.call(w, c, m, core.RLock.Renew(s.ask(w, c))))
}

// release: a process with waiters left stays in the line until the last one's deadline
// (nominator.releaseCall), so the release nominates it in its turn.
func (k reentrantKind) release(s *Sim, w *World, c *Client) {
	a := s.ask(w, c)
	a.Line = nomID(c)
	if last := w.proc(c).Qs[0].LastDeadline(); !last.IsZero() {
		a.Until = time.UnixMilli(msAt(last))
	}
	s.call(w, c, 0, core.RLock.Release(a))
	if !a.Until.IsZero() {
		// In line for them: the head asleep on c's hint looks again within the bound (N3).
		s.queueSays(w, c, 0, w.proc(c).Qs[0].InLine(at(w.Now), core.LostGrantBound))
	}
	s.released(w, c)
}

func (k reentrantKind) passOn(s *Sim, w *World, c *Client) {
	c.PassOn = ""
	s.call(w, c, 0, script.RLockPassCall(lockName, w.Now, nomID(c), false))
}

// route: a nomination goes to the process its channel names.
func (k reentrantKind) route(w *World, _ int, channel string) []int {
	id, ok := strings.CutPrefix(channel, nominationPref+":n")
	n, err := strconv.Atoi(id)
	i := slices.IndexFunc(w.Clients, func(c Client) bool { return c.Proc == n })
	if !ok || err != nil || i < 0 {
		return nil
	}
	return []int{i}
}

// deliver: a nomination wakes the process's queue; a process with no waiter passes it on.
func (k reentrantKind) deliver(s *Sim, w *World, c *Client, m msg) {
	if s.waiting(w, c, 0, 0) {
		s.ring(w, c, 0)
		return
	}
	c.PassOn = m.Payload
}

func (reentrantKind) counted(*Client) (core.Hold, bool) { return core.RLock, true }

func init() { kinds["reentrant"] = reentrantKind{} }

func (reentrantKind) wakes() bool { return true }
