package simulate

import (
	"strings"

	"seckill/internal/modes/naive"
)

// naiveKind is one of the lab's deliberately broken modes (internal/modes), run from the steps the
// mode itself sends (internal/modes/naive): each command a step of its own, so a fault or another
// client can come between any two. A waiter polls the first acquire step.
type naiveKind struct {
	base
	lock naive.Lock
}

func (k naiveKind) acquire(s *Sim, w *World, c *Client) {
	steps := k.lock.Acquire
	if len(steps) == 0 {
		s.note(w, c.name(), "no lock taken", "-")
		s.enter(w, c, 0)
		return
	}
	st := steps[c.Sub]
	if r := k.send(s, w, c, st); c.Sub == 0 && st.On != nil && !st.On(r, c.Value) {
		s.retryOrGiveUp(w, c)
		return
	}
	if c.Sub++; c.Sub == len(steps) {
		s.enter(w, c, 0)
	}
}

// release: a step that does not go on ends the release (the lock was not the holder's).
func (k naiveKind) release(s *Sim, w *World, c *Client) {
	steps := k.lock.Release
	if len(steps) == 0 {
		s.note(w, c.name(), "no lock to release", "-")
		s.released(w, c)
		return
	}
	st := steps[c.Sub]
	if r := k.send(s, w, c, st); st.On != nil && !st.On(r, c.Value) || c.Sub+1 == len(steps) {
		s.released(w, c)
		return
	}
	c.Sub++
}

// send runs step st of c on the master, labelled in the trace with the step's name and key (the
// blind DEL is a script: its source is not repeated).
func (k naiveKind) send(s *Sim, w *World, c *Client, st naive.Step) any {
	args := st.Args(lockName, c.Value, ms(s.cfg.Lease))
	label := strings.Join(args, " ")
	if args[0] == "EVAL" {
		label = st.Name + " " + lockName
	}
	return s.exec(w, c, 0, label, args...)
}

func init() {
	for name, l := range naive.Locks {
		kinds[name] = naiveKind{lock: l}
	}
}
