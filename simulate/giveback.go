package simulate

import "github.com/seckill-lab/seckill/lock/core"

// The background give-back of a process (the library's resend, lock/release_gate.go): what a
// waiter that left or rode still owes Redis (a line value's entry, a fair field's place), sent
// again every releaseRetry while it gets no answer. The scheduler picks when a due send runs
// (Choice "give-back"), so it may land before or after the waiter's next attempt.

// givingBack: c's process has a give-back to send now (its background resend is due, and the
// process is not paused).
func (c *Client) givingBack(now int64) bool {
	return c.GiveBack != "" && !c.Crashed && now >= c.GiveBackAt && now >= c.PausedUntil
}

// releaseRetry is how often the library sends a give-back again while it gets no answer, and
// releaseTimeout how long at least (a line entry's: until the entry's deadline): core's give-back
// policy, in virtual ms.
var releaseRetry, releaseTimeout = ms(core.ReleaseRetry), ms(core.ReleaseTimeout)

// giveBackLater hands what to c's process's background give-back, as the library's
// giveBackOnce does after a first send that got no answer (the master is down: this send). It is
// sent until until, and for releaseTimeout at least.
func (s *Sim) giveBackLater(w *World, c *Client, what string, until int64) {
	if c.GiveBack != "" {
		// One give-back at a time here: an older one still owed is sent once now.
		s.kind.giveBack(s, w, c, c.GiveBack)
	}
	c.GiveBack, c.GiveBackUntil = what, max(until, w.Now+releaseTimeout)
	s.resendAfter(w, c, w.Now)
}

// resendAfter schedules c's give-back's next send, releaseRetry after the one at sent, skipping
// the sends a master still down would refuse; past GiveBackUntil the library stops sending it.
func (s *Sim) resendAfter(w *World, c *Client, sent int64) {
	next := sent + releaseRetry
	if down := w.Masters[0].DownUntil; down > next {
		next += (down - next + releaseRetry - 1) / releaseRetry * releaseRetry
	}
	if next >= c.GiveBackUntil {
		s.note(w, c.name(), "stop giving back "+c.GiveBack, "its resend has run out")
		c.GiveBack, c.GiveBackAt, c.GiveBackUntil = "", 0, 0
		return
	}
	c.GiveBackAt = next
}

// giveBackStep is one send of c's process's background give-back: answered, it is done; else it
// is sent again later (resendAfter).
func (s *Sim) giveBackStep(w *World, c *Client) {
	if s.kind.giveBack(s, w, c, c.GiveBack) {
		c.GiveBack, c.GiveBackAt, c.GiveBackUntil = "", 0, 0
		// A waiter asleep behind the entry it took out is not told: it looks again within the
		// kind's relook bound.
		w.shake(s.kind.relook(s))
		return
	}
	s.resendAfter(w, c, w.Now)
}
