package simulate

import (
	"fmt"
	"slices"
)

// Choice is one thing the scheduler may do next.
type Choice struct {
	// "step", "ask" (a step whose command goes to Master, one of a round the library sends to
	// several masters at once: redlock's), "deliver", "fault", "time"
	Op     string
	Client int // index of the client (step, ask, deliver, client faults, pub/sub faults)
	Fault  string
	Master int
}

func (c Choice) String() string {
	switch c.Op {
	case "step":
		return fmt.Sprintf("step c%d", c.Client+1)
	case "ask":
		return fmt.Sprintf("step c%d m%d", c.Client+1, c.Master)
	case "deliver":
		return fmt.Sprintf("deliver to c%d", c.Client+1)
	case "fault":
		return fmt.Sprintf("fault %s c%d m%d", c.Fault, c.Client+1, c.Master)
	case "give-back":
		return fmt.Sprintf("give back for c%d", c.Client+1)
	}
	return "time"
}

// head is the index of the first message in flight to client i (-1: none), and whether it
// may arrive now.
func (w *World) head(i int) (int, bool) {
	for j, m := range w.Msgs {
		if m.To == i {
			return j, m.At <= w.Now
		}
	}
	return -1, false
}

// Choices lists what the scheduler may do in w, in a fixed order. Time moves only when no
// client can act and no message can arrive: clients are fast, and only a fault (a pause, a
// delayed message, a clock jump) lets the clock overtake one.
func (s *Sim) Choices(w *World) []Choice {
	if w.Finished || w.Violation != "" {
		return nil
	}
	var ch []Choice
	for i := range w.Clients {
		if c := &w.Clients[i]; c.runnable(w.Now) {
			ch = append(ch, s.steps(w, c, i)...)
		}
	}
	for i := range w.Clients {
		if _, ok := w.head(i); ok {
			ch = append(ch, Choice{Op: "deliver", Client: i})
		}
	}
	for i := range w.Clients {
		if w.Clients[i].givingBack(w.Now) {
			ch = append(ch, Choice{Op: "give-back", Client: i})
		}
	}
	busy := len(ch) > 0
	if w.FaultsUsed < s.cfg.MaxFaults {
		ch = append(ch, s.faultChoices(w)...)
	}
	if !busy && s.nextTimer(w) > w.Now {
		ch = append(ch, Choice{Op: "time"})
	}
	return ch
}

// steps are the choices of runnable client i's next step: one, or, where the step is one of a
// round of commands the library sends to every master at once, one per master not asked yet in
// the round (the order the commands run in is the scheduler's).
func (s *Sim) steps(w *World, c *Client, i int) []Choice {
	open := s.kind.asks(w, c)
	if open == 0 {
		return []Choice{{Op: "step", Client: i}}
	}
	var ch []Choice
	for k := range len(w.Masters) {
		if open&(1<<k) != 0 {
			ch = append(ch, Choice{Op: "ask", Client: i, Master: k})
		}
	}
	return ch
}

func (s *Sim) faultChoices(w *World) []Choice {
	var ch []Choice
	for _, f := range AllFaults {
		if !slices.Contains(s.cfg.Faults, f) {
			continue
		}
		for i := range w.Clients {
			c := &w.Clients[i]
			alive := !c.Crashed && !c.Done
			j, msgNow := w.head(i)
			switch {
			case f == FaultCrash && alive, f == FaultPause && alive && c.PausedUntil <= w.Now,
				f == FaultPubsubDelayed && msgNow, f == FaultPubsubLost && msgNow && w.Msgs[j].Channel != confirmation,
				f == FaultReplyLost && alive && c.PC == pcAcquire && !c.LoseReply && s.losesReplies(c):
				ch = append(ch, Choice{Op: "fault", Fault: f, Client: i})
			}
		}
		for k := range w.Masters {
			switch {
			case f == FaultMasterDown && w.Masters[k].DownUntil <= w.Now, f == FaultRestartEmpty, f == FaultClockFast:
				ch = append(ch, Choice{Op: "fault", Fault: f, Master: k})
			}
		}
	}
	return ch
}

// nextTimer is the earliest instant after now at which something is due (0: none).
func (s *Sim) nextTimer(w *World) int64 {
	t := int64(0)
	consider := func(x int64) {
		if x > w.Now && (t == 0 || x < t) {
			t = x
		}
	}
	for i := range w.Clients {
		consider(w.Clients[i].timer())
	}
	for _, m := range w.Msgs {
		consider(m.At)
	}
	for _, m := range w.Masters {
		consider(m.DownUntil)
	}
	return t
}

// Apply performs choice i of Choices(w) on w (which it changes), and records it in the trace.
func (s *Sim) Apply(w *World, ch Choice, i int) {
	before := w.trace
	switch ch.Op {
	case "ask":
		w.Clients[ch.Client].I = ch.Master
		s.step(w, &w.Clients[ch.Client])
	case "step":
		s.step(w, &w.Clients[ch.Client])
	case "deliver":
		j, _ := w.head(ch.Client)
		m := w.Msgs[j]
		w.Msgs = append(w.Msgs[:j:j], w.Msgs[j+1:]...)
		c := &w.Clients[ch.Client]
		if m.Channel == confirmation {
			s.note(w, c.name(), "subscription confirmed", "")
			s.confirmed(w, c, m.Part)
			break
		}
		s.note(w, c.name(), "receive "+m.Channel, fmt.Sprintf("%q", m.Payload))
		s.kind.deliver(s, w, c, m)
	case "give-back":
		s.giveBackStep(w, &w.Clients[ch.Client])
	case "fault":
		s.fault(w, ch)
	case "time":
		from := w.Now
		s.checkPrompt(w, s.nextTimer(w))
		s.advance(w, s.nextTimer(w))
		s.note(w, "clock", fmt.Sprintf("+%dms", w.Now-from), "")
	}
	if w.trace == before {
		// A step that sent nothing still takes its place in the trace, which holds the choices.
		s.note(w, ch.String(), "(nothing sent)", "")
	}
	w.trace.choice = i
	s.observe(w, w.Now)
	s.settle(w)
}

// settle ends the run once every client has finished or died and nothing is in flight: the
// clock then runs past every lease and wait, and Redis must be empty but for the kind's token
// counters. A run with nothing left to do that has not ended is stuck.
func (s *Sim) settle(w *World) {
	if w.Violation != "" {
		return
	}
	for i := range w.Clients {
		c := &w.Clients[i]
		if !(c.Crashed || c.Done) || c.PassOn != "" || c.GiveBack != "" && !c.Crashed {
			if len(s.Choices(w)) == 0 {
				w.Violation = fmt.Sprintf("stuck: %s waits for nothing that will come (%s)", c.name(), c.PC)
			}
			return
		}
	}
	if len(w.Msgs) > 0 {
		return
	}
	w.Finished = true
	s.forward(w, w.Now+ms(10*s.cfg.Lease+s.cfg.Wait+s.cfg.Pause+s.cfg.Down+s.cfg.Delay))
	if v := s.kind.settled(s, w); v != "" {
		w.Violation = v
		return
	}
	for k, m := range w.Masters {
		for _, key := range m.Data {
			if !s.kind.leftoverOK(key.Key) {
				w.Violation = fmt.Sprintf("leftover: m%d keeps %s (%s, ttl %v) after every client finished or died past its lease", k, key.Key, key.Type, key.TTL)
				return
			}
		}
	}
}

// fault applies one fault.
func (s *Sim) fault(w *World, ch Choice) {
	w.FaultsUsed++
	c := &w.Clients[ch.Client]
	who := c.name()
	switch ch.Fault {
	case FaultCrash:
		mates := w.mates(c)
		for i := range mates {
			mates[i].Crashed, mates[i].Inside, mates[i].PassOn, mates[i].GiveBack = true, false, "", ""
		}
		// Messages go to the process's first client (its mailbox), or to a fair waiter itself.
		w.Msgs = slices.DeleteFunc(w.Msgs, func(m msg) bool { return w.Clients[m.To].Proc == c.Proc })
		// What the dead process was told and had not acted on yet (a nomination, a grant, a
		// message on its way) is lost, as a message sent to it later is.
		w.shake(s.kind.lostBound(s))
	case FaultPause:
		mates := w.mates(c)
		for i := range mates {
			mates[i].PausedUntil, mates[i].PausedValue = w.Now+ms(s.cfg.Pause), mates[i].Value
		}
	case FaultPubsubLost:
		j, _ := w.head(ch.Client)
		w.Msgs = append(w.Msgs[:j:j], w.Msgs[j+1:]...)
		w.shake(s.kind.lostBound(s))
	case FaultPubsubDelayed:
		j, _ := w.head(ch.Client)
		w.Msgs[j].At = w.Now + ms(s.cfg.Delay)
		if w.Msgs[j].Channel == confirmation {
			w.shake(ms(s.cfg.Delay)) // nothing is lost: the head looks again when it comes
		} else {
			w.shake(max(ms(s.cfg.Delay), s.kind.lostBound(s)))
		}
	case FaultReplyLost:
		c.LoseReply = true
	case FaultMasterDown:
		w.Masters[ch.Master].DownUntil = w.Now + ms(s.cfg.Down)
		who = fmt.Sprintf("m%d", ch.Master)
	case FaultRestartEmpty:
		s.wipe(w, ch.Master)
		w.shake(ms(s.cfg.Lease))
		w.Broken = true
		who = fmt.Sprintf("m%d", ch.Master)
	case FaultClockFast:
		s.jump(w, ch.Master, ms(s.cfg.Jump))
		w.shake(ms(s.cfg.Lease))
		w.Broken = true
		who = fmt.Sprintf("m%d", ch.Master)
	}
	s.note(w, "fault", ch.Fault+" "+who, "")
}

// losesReplies: a lost reply of c's attempt is modelled (FaultReplyLost) for its kind: one whose
// hash counts an owner's holds, or the line, which answers the same value alike.
func (s *Sim) losesReplies(c *Client) bool {
	_, counted := s.kind.counted(c)
	_, line := s.kind.(lineKind)
	return counted || line
}
