package simulate

import "fmt"

// The phases of a client; a kind's own steps within a phase are numbered by Client.Sub.
const (
	pcAcquire = "acquire"
	pcWork    = "work"
	pcCheck   = "check"
	pcWrite   = "write"
	pcRelease = "release"
	pcDone    = "done"
)

// Client is one simulated client, alone in its process: a step machine whose step performs
// exactly one action. Every field is a value, so a World copies it whole.
type Client struct {
	ID    int
	PC    string
	Sub   int // the kind's step within the phase
	Round int // acquisitions finished (held and released, or given up)

	Value    string // this acquisition's lock value (or hash field)
	Deadline int64  // when the wait runs out
	Start    int64  // when this acquisition began
	Waiting  bool   // asleep until WakeAt or a message
	WakeAt   int64

	Granted  bool // a release handed it the lock (a message said so)
	GrantTok int64
	Next     int64 // a line kind's next look at the latest

	Inside  bool
	Read    int   // the resource's version when it entered
	Token   int64 // its fencing token
	WorkEnd int64
	RenewAt int64 // the watchdog's next round (0: none)
	Lost    bool  // the watchdog found the lock gone
	Got     [3]bool
	TTLs    [3]int64 // what each master said of the lock's PTTL (redlock's holderLeft)
	I       int      // the master its next command goes to

	PassOn      string // a lock handed to an acquisition that has left: pass it on
	Crashed     bool
	Done        bool
	PausedUntil int64
	PausedValue string // the acquisition it was paused in, while the pause is in effect (liveness.go)
}

func (c *Client) name() string { return fmt.Sprintf("c%d", c.ID) }

// acq names the current acquisition.
func (c *Client) acq() string { return fmt.Sprintf("c%d.r%d", c.ID, c.Round) }

// sleep makes c wait until t or a message.
func (c *Client) sleep(t int64) {
	c.Waiting, c.WakeAt = true, t
}

// runnable: c can take a step now.
func (c *Client) runnable(now int64) bool {
	if c.Crashed || now < c.PausedUntil {
		return false
	}
	if c.PassOn != "" {
		return true
	}
	return !c.Done && (!c.Waiting || now >= c.WakeAt)
}

// timer is the next instant c has something to do at (0: none).
func (c *Client) timer() int64 {
	if c.Crashed || c.Done {
		return 0
	}
	t := int64(0)
	if c.Waiting {
		t = c.WakeAt
	}
	return max(t, c.PausedUntil)
}

// begin starts c's next acquisition, or ends it after its last round.
func (s *Sim) begin(w *World, c *Client) {
	if c.Round >= s.cfg.Rounds {
		c.PC, c.Done, c.Waiting = pcDone, true, false
		return
	}
	c.PC, c.Sub, c.I = pcAcquire, 0, 0
	c.Value = fmt.Sprintf("p%d:c%d.r%d", c.ID, c.ID, c.Round)
	c.Start, c.Deadline = w.Now, w.Now+ms(s.cfg.Wait)
	c.Waiting, c.WakeAt, c.Granted, c.GrantTok, c.Next = false, 0, false, 0, 0
	c.Inside, c.Lost, c.RenewAt, c.Got = false, false, 0, [3]bool{}
}

// enter: c holds the lock (token: its fencing token) and reads the resource. Where the kind
// fences, the read is the service's fenced read (store/lua/fenced_read.lua): it registers the
// token, so an older holder's later write is refused, and it is itself refused when a newer token
// has read or written already; the sale then ends there (stale) and the holder releases at once.
// The read is folded into the step that won the lock: a write landing between the two would be
// seen by the read, so no interleaving is lost that could matter.
func (s *Sim) enter(w *World, c *Client, token int64) {
	c.PC, c.Sub, c.I = pcWork, 0, 0
	c.Inside, c.Read, c.Token = true, w.Res.Version, token
	if s.kind.fenced() {
		if token < w.Res.MaxToken {
			c.PC, c.Waiting, c.RenewAt = pcRelease, false, 0
			s.amend(w, fmt.Sprintf("; read with token %d refused (newest %d): stale, release", token, w.Res.MaxToken))
			return
		}
		w.Res.MaxToken = token
	}
	c.WorkEnd = w.Now + ms(s.cfg.Work)
	c.RenewAt = 0
	if s.kind.watchdog() {
		c.RenewAt = w.Now + max(ms(s.cfg.Lease)/3, 1)
	}
	c.sleepWork()
}

func (c *Client) sleepWork() {
	t := c.WorkEnd
	if c.RenewAt != 0 && !c.Lost {
		t = min(t, c.RenewAt)
	}
	c.sleep(t)
}

// giveUp ends an acquisition without the lock; checkGiveUp (liveness.go) judges it.
func (s *Sim) giveUp(w *World, c *Client) {
	s.checkGiveUp(w, c)
	c.Round++
	s.begin(w, c)
}

// released ends an acquisition that held the lock.
func (s *Sim) released(w *World, c *Client) {
	c.Inside = false
	c.Round++
	s.begin(w, c)
}

// step performs c's next action.
func (s *Sim) step(w *World, c *Client) {
	c.Waiting, c.WakeAt = false, 0
	if c.PassOn != "" {
		s.kind.passOn(s, w, c)
		return
	}
	switch c.PC {
	case pcAcquire:
		s.kind.acquire(s, w, c)
	case pcWork:
		if c.RenewAt != 0 && !c.Lost && w.Now >= c.RenewAt {
			if s.kind.renew(s, w, c) && !c.Lost {
				c.RenewAt = w.Now + max(ms(s.cfg.Lease)/3, 1)
			}
			c.sleepWork()
			return
		}
		s.check(w, c)
	case pcWrite:
		s.write(w, c)
	case pcRelease:
		s.kind.release(s, w, c)
	}
}

// check is the holder's look at its lease before it writes: a lock its watchdog found gone is
// not written under.
func (s *Sim) check(w *World, c *Client) {
	if c.Lost {
		s.note(w, c.name(), "check lease", "lost: skip the write")
		c.PC, c.Sub = pcRelease, 0
		return
	}
	s.note(w, c.name(), "check lease", "held")
	c.PC = pcWrite
}

// write is the holder's write at the resource: refused when the kind fences and a newer token
// was accepted; a write over a version the writer never read is a lost update: two clients
// inside at once whose writes both land.
func (s *Sim) write(w *World, c *Client) {
	c.PC, c.Sub = pcRelease, 0
	if s.kind.fenced() && c.Token < w.Res.MaxToken {
		s.note(w, c.name(), fmt.Sprintf("write v%d token %d", c.Read+1, c.Token), fmt.Sprintf("refused (newest token %d)", w.Res.MaxToken))
		return
	}
	s.note(w, c.name(), fmt.Sprintf("write v%d token %d", c.Read+1, c.Token), "ok")
	if w.Violation == "" && w.Res.Version != c.Read {
		w.Violation = fmt.Sprintf("mutual exclusion: %s wrote over v%d, a write it never read (%s was inside at once and its write landed too)", c.acq(), w.Res.Version, w.Res.Writer)
	}
	if w.Violation == "" && s.kind.fenced() && c.Token == w.Res.WriteToken && w.Res.Writer != "" {
		w.Violation = fmt.Sprintf("fencing: %s wrote with token %d, the token %s wrote with", c.acq(), c.Token, w.Res.Writer)
	}
	w.Res.Version++
	w.Res.MaxToken = max(w.Res.MaxToken, c.Token)
	w.Res.WriteToken = c.Token
	w.Res.Writer = c.acq()
}
