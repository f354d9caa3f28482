package simulate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The liveness check (issue 35): no waiter waits past its Wait while the lock is free and no
// fault is in effect. Stated on the virtual state, after every step:
//
//   - free: no client is inside, and the lock key is absent from enough masters that an attempt
//     would win: the one master of a single-server kind; all three for multilock (a part held
//     anywhere keeps everyone else out, the parts being taken in one order); a majority for
//     redlock (a waiter's SET NX wins on every master without the key, and two are enough; a
//     key left on one master does not keep the lock from anybody);
//   - a fault in effect: a crashed client's lock key or queue/line entry still in Redis (any
//     entry naming its process, "p<id>:…", or its nomination id "n<id>"); a paused client still
//     paused, or the lock still holding the acquisition it was paused in; an acquisition under
//     way whose attempt's reply was lost, while the lock holds what that attempt took or until
//     an attempt made again is answered; a give-back not yet sent (a waiter behind the entry it
//     takes out looks again within the kind's relook bound after it); a master
//     still down,
//     and for redlock noQuorumPoll (2 s) after it came back: a waiter that found no quorum able
//     to free (masters not answering) looks again that much later, longer than a lease; within
//     a lease after a master restarted empty or its clock jumped (a waiter may be asleep on a
//     PTTL read before it, at most a lease); within the kind's lost-message bound after a
//     pub/sub message was lost, and within the delay or that bound, the longer, after one was
//     delayed;
//   - calm: free with no fault in effect. World.Calm is when the current calm stretch began
//     (-1: not calm), to the millisecond: a clock move that lets keys expire or a fault's effect
//     end on the way finds the instant it happened (calmStart), not the next timer's.
//
// A waiter that gives up is a violation when the lock has been calm for longer than G, the
// longest a correct waiter of the kind sleeps without looking again (kind.relook). Calm must
// last G past the end of a fault's effect too, not only past the lock becoming free: a waiter
// may have been put to sleep by the fault itself (the line's waiter whose command a master
// down refused looks again core.LostGrantBound later; counted from the master's return alone, a
// give-up in that gap would be a "violation" the protocol allows).

// relook bounds of the kinds (lock/waiting.go): a queued head looks again at least every
// core.LostGrantBound (line.go's rule L5, nomination.go's N3); the fair lock's head beats every core.AliveEvery (125 ms) and looks
// at once when the beat finds the lock free (fair.go's rule F6), or handed to it (F7), within the
// same bound.
var relookLine = lostGrant

// calmAt: at instant x (w.Now or later, with nothing but time passing) the lock is free and no
// fault is in effect.
func (s *Sim) calmAt(w *World, x int64) bool { return s.freeAt(w, x) && s.effectAt(w, x) == "" }

// alive: key k, as saved at w.Now, still exists at instant x (its TTL not run out by then).
func alive(w *World, k keySnap, x int64) bool { return k.TTL <= 0 || w.Now+ms(k.TTL) > x }

// freeAt: no client inside, and the lock key absent from at least kind.freeNeeds() masters.
func (s *Sim) freeAt(w *World, x int64) bool {
	for i := range w.Clients {
		if w.Clients[i].Inside {
			return false
		}
	}
	free := 0
	for _, m := range w.Masters {
		i := slices.IndexFunc(m.Data, func(k keySnap) bool { return k.Key == s.kind.lockKey() })
		if i < 0 || !alive(w, m.Data[i], x) {
			free++
		}
	}
	return free >= s.kind.freeNeeds()
}

// effectAt names a fault in effect at instant x ("": none).
func (s *Sim) effectAt(w *World, x int64) string {
	for i := range w.Clients {
		c := &w.Clients[i]
		switch {
		case c.Crashed && s.mentions(w, x, c):
			return c.name() + " crashed, its entries still in Redis"
		case x < c.PausedUntil:
			return c.name() + " paused"
		case c.PausedValue != "" && s.lockHeldBy(w, x, c.PausedValue):
			return c.name() + " paused, its lock still there"
		case c.Orphans != 0 && c.PC == pcAcquire && s.lockHeldBy(w, x, c.Value):
			return c.name() + " lost a reply, and what that attempt took is still there"
		case c.Broken > 0 && c.PC == pcAcquire:
			return c.name() + " lost a reply, and pauses before it tries again in place"
		case c.GiveBack != "":
			return c.name() + "'s process still owes a give-back (" + c.GiveBack + ")"
		}
	}
	for k, m := range w.Masters {
		switch {
		case x < m.DownUntil:
			return fmt.Sprintf("m%d down", k)
		case m.DownUntil > 0 && x < m.DownUntil+s.kind.downBound():
			return fmt.Sprintf("m%d back, a waiter may still sleep on its silence", k)
		}
	}
	if x < w.Shaken {
		return "within the bound after a restart, clock jump or pub/sub fault"
	}
	return ""
}

// mentions: some key alive at x names c's process in a value, list element, hash field or
// value, or sorted set member: its lock, or its entry in a line or queue ("p<id>:…"), or its
// reentrant process in the line ("n<id>"). The fair lock's alive marker ("p<id>" alone) holds
// nobody up and is not counted.
func (s *Sim) mentions(w *World, x int64, c *Client) bool {
	proc, nom := "p"+strconv.Itoa(c.Proc)+":", "n"+strconv.Itoa(c.ID)
	names := func(v string) bool { return strings.HasPrefix(v, proc) || v == nom }
	for _, m := range w.Masters {
		for _, k := range m.Data {
			if alive(w, k, x) && (names(k.Str) || slices.ContainsFunc(k.List, names) ||
				slices.ContainsFunc(k.Hash, names) || slices.ContainsFunc(k.ZSet, names)) {
				return true
			}
		}
	}
	return false
}

// lockHeldBy: the lock key on some master holds value v at x (its string, or a field of
// Redisson's hash).
func (s *Sim) lockHeldBy(w *World, x int64, v string) bool {
	for _, m := range w.Masters {
		for _, k := range m.Data {
			if alive(w, k, x) && s.kind.holds(k, v, x) {
				return true
			}
		}
	}
	return false
}

// heldOn counts the masters whose lock key holds value v now (its string, or a field of Redisson's
// hash).
func (s *Sim) heldOn(w *World, v string) int {
	n := 0
	for _, m := range w.Masters {
		for _, k := range m.Data {
			if alive(w, k, w.Now) && s.kind.holds(k, v, w.Now) {
				n++
			}
		}
	}
	return n
}

// calmStart is the first instant in [w.Now, t] at which the lock is calm, time alone moving
// from w.Now to t (-1: none): the candidates are now, every key's expiry and every fault
// effect's end within the move. Time only takes things away (keys expire, effects end), so once
// calm it stays calm until t.
func (s *Sim) calmStart(w *World, t int64) int64 {
	at := []int64{w.Now, w.Shaken}
	for _, m := range w.Masters {
		at = append(at, m.DownUntil, m.DownUntil+s.kind.downBound())
		for _, k := range m.Data {
			if k.TTL > 0 {
				at = append(at, w.Now+ms(k.TTL))
			}
		}
	}
	for i := range w.Clients {
		at = append(at, w.Clients[i].PausedUntil)
	}
	slices.Sort(at)
	for _, x := range at {
		if x >= w.Now && x <= t && s.calmAt(w, x) {
			return x
		}
	}
	return -1
}

// advance moves the clock to t, and World.Calm to the instant on the way at which the lock
// became calm.
func (s *Sim) advance(w *World, t int64) {
	since := s.calmStart(w, t)
	s.forward(w, t)
	s.observe(w, since)
}

// observe updates World.Calm after a step; since is when the lock became calm if it is calm now
// (calmStart for a clock move, the step's instant otherwise). Effects that are over are
// forgotten, so two states that differ only in a past fault hash alike.
func (s *Sim) observe(w *World, since int64) {
	if w.Shaken <= w.Now {
		w.Shaken = 0
	}
	for i := range w.Clients {
		c := &w.Clients[i]
		if c.PausedValue != "" && w.Now >= c.PausedUntil && !s.lockHeldBy(w, w.Now, c.PausedValue) {
			c.PausedValue = ""
		}
	}
	switch {
	case !s.calmAt(w, w.Now):
		w.Calm = -1
	case w.Calm < 0 && since >= 0 && since <= w.Now:
		w.Calm = since
	case w.Calm < 0:
		w.Calm = w.Now
	}
}

// promptBound is how long a released lock may lie idle before a waiter of a kind that wakes on
// the release takes it (waiting.go rule 6: within milliseconds, without polling).
const promptBound = 10

// checkPrompt: the clock is about to move to t. When a waiter sleeps through the move while the
// lock serves nobody (no client inside, and the lock key absent or holding a waiting client's
// value: handed to it, or a multilock part it took on the way) and no fault is in effect, the
// move must be short: a release wakes a waiter at once (kinds that wake on messages; a polling
// kind's relook bound is the liveness check's). So must it be when the lock, though held, would
// let the waiter in (kind.admits: a reader while only readers hold a read-write lock).
func (s *Sim) checkPrompt(w *World, t int64) {
	if !s.kind.wakes() || w.Violation != "" || t-w.Now <= promptBound || s.effectAt(w, w.Now) != "" {
		return
	}
	idle := s.idle(w)
	for i := range w.Clients {
		c := &w.Clients[i]
		if c.PC != pcAcquire || c.Crashed || c.Done {
			continue
		}
		switch {
		case idle:
			w.Violation = fmt.Sprintf("wake: %s slept from %d to %d ms while the lock served nobody and no fault was in effect (a release wakes a waiter at once)", c.acq(), w.Now, t)
			return
		case s.kind.admits(w, c):
			w.Violation = fmt.Sprintf("wake: %s slept from %d to %d ms while the lock would let it in and no fault was in effect (readers share)", c.acq(), w.Now, t)
			return
		}
	}
}

// idle: no client is inside, and on every master the lock key is absent or holds the value of a
// client that is still acquiring.
func (s *Sim) idle(w *World) bool {
	waiting := map[string]bool{}
	for i := range w.Clients {
		c := &w.Clients[i]
		if c.Inside {
			return false
		}
		if c.PC == pcAcquire && !c.Crashed && !c.Done {
			waiting[c.Value] = true
		}
	}
	for _, m := range w.Masters {
		for _, k := range m.Data {
			if k.Key != s.kind.lockKey() || !alive(w, k, w.Now) {
				continue
			}
			if !waiting[k.Str] && !slices.ContainsFunc(k.Hash, func(f string) bool { return waiting[f] }) {
				return false
			}
		}
	}
	return true
}

// calmFor is how long the lock has been calm (-1: it is not).
func (w *World) calmFor() int64 {
	if w.Calm < 0 {
		return -1
	}
	return w.Now - w.Calm
}

// shake starts a fault's effect window of d from now (restart, clock jump, pub/sub).
func (w *World) shake(d int64) { w.Shaken = max(w.Shaken, w.Now+d) }

// checkGiveUp is the liveness verdict on c giving up now: a violation when its wait ended
// before now (and no pause held it), when the lock has been calm for longer than the kind's
// relook bound, or, as before, when no fault happened at all in the run (the wait is longer than
// every other client's holds together).
func (s *Sim) checkGiveUp(w *World, c *Client) {
	if w.Violation != "" {
		return
	}
	g := s.kind.relook(s)
	switch d := w.calmFor(); {
	case w.Now > max(c.Deadline, c.PausedUntil):
		// A wait ends at its deadline, wherever the waiter stands in its queue (rule 7), unless
		// a pause held the waiter past it.
		w.Violation = fmt.Sprintf("late: %s gave up %d ms after its wait ended", c.acq(), w.Now-c.Deadline)
	case d > g:
		w.Violation = fmt.Sprintf("liveness: %s gave up after waiting %v while the lock had been free for %d ms with no fault in effect (a waiter looks again within %d ms)",
			c.acq(), s.cfg.Wait, d, g)
	case w.FaultsUsed == 0:
		w.Violation = fmt.Sprintf("liveness: %s gave up after waiting %v with no fault in the run", c.acq(), s.cfg.Wait)
	}
}
