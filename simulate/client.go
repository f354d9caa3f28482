package simulate

import (
	"errors"
	"fmt"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
)

// The phases of a client; a kind's own steps within a phase are numbered by Client.Sub.
const (
	pcAcquire = "acquire"
	pcWork    = "work"
	pcCheck   = "check"
	pcWrite   = "write"
	pcRelease = "release"
	pcDone    = "done"
)

// Client is one simulated client, a step machine whose step performs exactly one action, in its
// process (Proc, numbered from 1: Config.PerProcess clients each), whose state its clients share
// (World.Procs). Every field is a value, so a World copies it whole.
type Client struct {
	ID    int
	Proc  int
	PC    string
	Sub   int // the kind's step within the phase
	Round int // acquisitions finished (held and released, or given up)

	Value    string // this acquisition's lock value (or hash field)
	Deadline int64  // when the wait runs out
	Start    int64  // when this acquisition began
	Waiting  bool   // asleep until WakeAt or a message
	WakeAt   int64

	Granted   bool  // a release handed it the lock (a message said so)
	GrantHere bool  // fair: by a release in its own process, so the lock lives its lease
	Next      int64 // a line kind's next look at the latest

	Inside  bool
	Read    int   // the resource's version when it entered
	Entered int   // the resource's count of readers' entries when it entered (readwrite)
	Token   int64 // its fencing token
	WorkEnd int64
	// The holder's lease, for the library's kinds: its life is the library's own (lock/core), given
	// this client's events; LifeWake is when it asks to be ticked (0: never), Lost whether it said
	// the lease is lost. A renewal round it asked for is under way from RoundAt.
	Leased   bool
	Life     core.Life
	LifeWake int64
	Lost     bool
	Renewing bool
	RoundAt  int64
	RoundOut renewal // the worst answer of the round so far (a multilock's parts)
	Sent     int64   // when its last attempt was sent: a lock handed over counts its TTL from it
	BeatAt   int64   // the fair waiter's process's next heartbeat (0: none)
	// The acquisition's place in its process's queue (queue.go): Turn, the queue said to try;
	// Over, its wait is over. Riding: out of it after an attempt no master answered, pausing
	// before it enters again (ride); Rides, how many such pauses the acquisition has made.
	Queued, Turn, Over bool
	Riding             bool
	Rides              int
	Got                [3]bool
	TTLs               [3]time.Duration // what each master said of the lock's PTTL, as core.QuorumFree reads it (redlock)
	Replies            [3]int64         // each master's reply to the round under way (redlock)
	Redlock            core.Redlock     // the redlock attempt under way
	Undo               bool             // the redlock attempt's lost SET round is being given back (redsync)
	I                  int              // the master its next command goes to
	Asked              uint8            // the masters asked so far in a round of parallel asks (redlock)

	// LoseReply: the next attempt's reply is lost (FaultReplyLost); ReplyLost: the last one's
	// was; Broken, how many in a row were (core.BrokenRetry); Orphans, the masters (a bit each)
	// where an attempt of this acquisition ran with its reply lost.
	LoseReply, ReplyLost bool
	Broken               int
	Orphans              uint8
	// GiveBack: what a give-back of c's process still sends in the background (the library's
	// resend: a line value's entry, a fair field's queue entry), at GiveBackAt at the earliest,
	// until GiveBackUntil, the entry's deadline (giveBackStep).
	GiveBack                  string
	GiveBackAt, GiveBackUntil int64
	// KeepPlace: a fair waiter's place in the queue is kept while its acquisition rides; it is left
	// (a give-back) if the acquisition ends without the lock.
	KeepPlace bool

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
	if c.BeatAt != 0 && c.PC == pcAcquire && c.BeatAt < t {
		t = c.BeatAt // a fair waiter's process beats meanwhile
	}
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
	if c.Crashed {
		return 0
	}
	t := int64(0)
	if !c.Done {
		if c.Waiting {
			t = c.WakeAt
		}
		t = max(t, c.PausedUntil)
	}
	if gb := max(c.GiveBackAt, c.PausedUntil); c.GiveBack != "" && (t == 0 || gb < t) {
		t = gb
	}
	return t
}

// begin starts c's next acquisition, or ends it after its last round.
func (s *Sim) begin(w *World, c *Client) {
	if c.Round >= s.cfg.Rounds {
		c.PC, c.Done, c.Waiting = pcDone, true, false
		return
	}
	c.PC, c.Sub, c.I, c.Asked = pcAcquire, 0, 0, 0
	c.Value = fmt.Sprintf("p%d:c%d.r%d", c.Proc, c.ID, c.Round)
	c.Start, c.Deadline = w.Now, w.Now+ms(s.cfg.Wait)
	c.Waiting, c.WakeAt, c.Granted, c.GrantHere, c.Next = false, 0, false, false, 0
	c.Inside, c.Got, c.Sent, c.BeatAt = false, [3]bool{}, w.Now, 0
	c.Redlock, c.Undo = core.Redlock{}, false
	c.Leased, c.Life, c.LifeWake, c.Lost, c.Renewing, c.RoundAt = false, core.Life{}, 0, false, false, 0
	c.Queued, c.Turn, c.Over, c.Riding, c.Rides = false, false, false, false, 0
	c.LoseReply, c.ReplyLost, c.Broken, c.Orphans, c.KeepPlace = false, false, 0, 0, false
	if k, ok := s.kind.(lineKind); ok {
		k.wait(s, w, c)
	}
	if cfg, ok := s.kind.queue(); ok {
		s.waitIn(w, c, cfg)
	}
}

// enter: c holds the lock (token: its fencing token) and reads the resource. Where the kind
// fences, the read is the service's fenced read (store/lua/fenced_read.lua): it registers the
// token, so an older holder's later write is refused, and it is itself refused when a newer token
// has read or written already; the sale then ends there (stale) and the holder releases at once.
// The read is folded into the step that won the lock: a write landing between the two would be
// seen by the read, so no interleaving is lost that could matter.
func (s *Sim) enter(w *World, c *Client, token int64) {
	c.PC, c.Sub, c.I, c.Asked = pcWork, 0, 0, 0
	c.Inside, c.Read, c.Token, c.Entered = true, w.Res.Version, token, w.Res.Reads
	if s.kind.reader(c) {
		w.Res.Reads++
		w.Res.Reader = c.acq()
	}
	if s.kind.fenced() {
		if token < w.Res.MaxToken {
			c.PC, c.Waiting = pcRelease, false
			s.amend(w, fmt.Sprintf("; read with token %d refused (newest %d): stale, release", token, w.Res.MaxToken))
			return
		}
		w.Res.MaxToken = token
	}
	c.WorkEnd = w.Now + ms(s.cfg.Work)
	c.sleepWork()
}

// hold is enter for the library's kinds: the holder's lease starts its life (core.NewLife, as
// the library starts it) with the lock's TTL ttl counted from since, the send of the command that
// took it (or of the waiter's last attempt, for a lock handed over), and a watchdog where the kind
// has one.
func (s *Sim) hold(w *World, c *Client, token, since, ttl int64) {
	l, r := core.NewLife(at(w.Now), core.SafeEnd(at(since), dur(ttl)), dur(ttl), s.cfg.Lease, s.kind.watchdog())
	c.Leased, c.Life = true, *l
	if c.Queued {
		s.won(w, c)
	}
	s.enter(w, c, token)
	s.lifeSays(w, c, r)
}

// handedOver takes a lock a release handed to c, with a TTL of ttl counted from c's last
// attempt: when that count leaves too little of it (core.Stale), the lock is renewed first by
// renew, and a renewal that fails ends the acquisition, the lock given back by the next step
// (the library's freshen and handedOverLate).
func (s *Sim) handedOver(w *World, c *Client, token, ttl int64, renew func() any) {
	if c.Queued {
		s.won(w, c) // out of the queue, whether the lock is kept or given back
	}
	since := c.Sent
	if core.Stale(at(w.Now), core.SafeEnd(at(since), dur(ttl)), dur(ttl)) {
		if renewOutcome(renew()) != renewOK {
			v := c.Value
			s.giveUp(w, c)
			c.PassOn = v
			return
		}
		since, ttl = w.Now, ms(s.cfg.Lease)
	}
	s.hold(w, c, token, since, ttl)
}

// at and dur turn virtual milliseconds into the core's time.
func at(t int64) time.Time      { return epoch.Add(dur(t)) }
func dur(d int64) time.Duration { return time.Duration(d) * time.Millisecond }
func msAt(t time.Time) int64    { return int64((t.Sub(epoch) + time.Millisecond - 1) / time.Millisecond) }

// lifeSays does what the lease's life answered: a loss is noted, a timer is kept, and a renewal
// it asks for starts a round of the kind's renewal, whose first step is the client's next.
func (s *Sim) lifeSays(w *World, c *Client, r core.Ready) {
	c.LifeWake = 0
	if !r.Wake.IsZero() {
		c.LifeWake = msAt(r.Wake)
	}
	switch {
	case r.Lost:
		c.Lost = true
		s.note(w, c.name(), "lease", "lost: "+r.Why.Error())
		if w.Violation == "" && w.FaultsUsed == 0 {
			w.Violation = fmt.Sprintf("liveness: %s's lease was lost with no fault in the run (%v)", c.acq(), r.Why)
		}
	case r.Renew:
		c.Renewing, c.RoundAt, c.I, c.Asked = true, w.Now, 0, 0
	}
	if c.PC == pcWork {
		c.sleepWork()
	}
}

func (c *Client) sleepWork() {
	t := c.WorkEnd
	switch {
	case c.Renewing:
		t = 0 // the round's next step is due now
	case c.LifeWake != 0 && !c.Lost:
		t = min(t, c.LifeWake)
	}
	c.sleep(t)
}

// renewal is how one renewal round went.
type renewal int

const (
	renewOK      renewal = iota
	renewFailed          // no answer: the lock may still be ours
	renewRefused         // the lock is not ours any more
)

// errRefused is why a lease is lost when a renewal was refused.
var errRefused = errors.New("a renewal was refused: the lock is not ours any more")

// renewOutcome reads a renewal script's reply: an error (a master down) no answer, else as the
// library reads it (core.Renewed).
func renewOutcome(reply any) renewal {
	if _, ok := reply.(error); ok {
		return renewFailed
	}
	if core.Renewed(reply) {
		return renewOK
	}
	return renewRefused
}

// ask is c's hold as a core.Hold builds its commands, by the scripts' clock (virtual
// milliseconds, sent as unix ms).
func (s *Sim) ask(w *World, c *Client) core.Ask {
	return core.Ask{Key: lockName, Field: c.Value, Lease: s.cfg.Lease, Now: time.UnixMilli(w.Now)}
}

// attempt sends c's attempt of h for a to master m and reads its reply as the library does;
// answered is false when the master is down. A reply the kind never answers, or a refusal no
// acquisition here asks for, is a violation (unexpected).
func (s *Sim) attempt(w *World, c *Client, m int, h core.Hold, a core.Ask) (t core.Try, answered bool) {
	r := s.call(w, c, m, h.Acquire(a))
	if r == errDown {
		return core.Try{}, false
	}
	if c.LoseReply {
		// It ran; its reply is lost on a connection that broke: no answer, as a master down.
		c.LoseReply, c.ReplyLost, c.Orphans = false, true, c.Orphans|1<<m
		s.amend(w, " (its reply lost)")
		if !a.Until.IsZero() && !h.Tried(r, a.Now).Held {
			// It queued its process in the reentrant line, which the process does not know: a
			// release may nominate it while it has no waiter, and that nomination is lost until
			// the entry's deadline (the next waiter looks again within the bound, N3).
			w.shake(a.Until.UnixMilli() - w.Now + s.kind.lostBound(s))
		}
		return core.Try{}, false
	}
	c.Broken = 0
	if t = h.Tried(r, a.Now); t.Odd || t.Refused {
		s.unexpected(w, c, "acquire", r)
	}
	if t.Held && c.Orphans&(1<<m) != 0 {
		s.settleHolds(w, c, m, h, a)
	}
	return t, true
}

// waitMs is a Try's Wait in virtual ms (-1: until a release rings).
func waitMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return ms(d)
}

// renewStep performs one step of the renewal round under way and, once the round is over, tells
// the lease's life how it went.
func (s *Sim) renewStep(w *World, c *Client) {
	done, out := s.kind.renew(s, w, c)
	if !done {
		return
	}
	c.Renewing = false
	now := at(w.Now)
	var r core.Ready
	switch out {
	case renewOK:
		r = c.Life.Renewed(now, core.SafeEnd(at(c.RoundAt), s.cfg.Lease))
	case renewRefused:
		r = c.Life.Refused(errRefused)
	default:
		r = c.Life.Failed(now)
	}
	s.lifeSays(w, c, r)
}

// giveUp ends an acquisition without the lock; checkGiveUp (liveness.go) judges it.
func (s *Sim) giveUp(w *World, c *Client) {
	if c.Orphans != 0 {
		s.giveBackOrphans(w, c)
	}
	if c.KeepPlace {
		c.KeepPlace = false
		s.giveBackLater(w, c, c.Value, w.Now+ms(s.cfg.Lease)) // orphans.giveBack: for a lease
	}
	s.checkGiveUp(w, c)
	c.Round++
	s.begin(w, c)
}

// released ends an acquisition that held the lock.
func (s *Sim) released(w *World, c *Client) {
	s.checkReleased(w, c)
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
		if c.Riding {
			s.rideOn(w, c)
			return
		}
		if !s.kind.timerDue(s, w, c) && s.queueTurn(w, c) {
			s.kind.acquire(s, w, c)
		}
	case pcWork:
		// Once the work is done the holder looks at its lease (Lease.Lost asks the life whether
		// its end has come, whatever its timer) before any renewal due at the same time.
		switch {
		case c.Renewing:
			s.renewStep(w, c)
			return
		case w.Now >= c.WorkEnd:
		case c.Leased && !c.Lost && c.LifeWake != 0 && w.Now >= c.LifeWake:
			s.lifeSays(w, c, c.Life.Tick(at(w.Now)))
			if c.Renewing {
				s.renewStep(w, c)
			}
			return
		default:
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

// check is the holder's look at its lease before it writes (Lease.Lost, which asks the life
// whether its end has come whatever its timer): a lease lost is not written under. A lease that
// says it is held must be: its lock is still this holder's in Redis (on as many masters as it
// takes to hold it), unless a master restarted empty or its clock jumped, the faults that take a
// lock from under its lease by design.
func (s *Sim) check(w *World, c *Client) {
	if c.Leased {
		s.lifeSays(w, c, c.Life.Check(at(w.Now)))
		if !c.Lost && w.Violation == "" && !w.Broken && s.heldOn(w, c.Value) < s.kind.freeNeeds() {
			w.Violation = fmt.Sprintf("lease: %s's lease said it held the lock at its check, but the lock was not its in Redis (Lost closes too late)", c.acq())
		}
	}
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
// inside at once whose writes both land. A write after a reader entered since the writer did
// (readwrite) was made with a reader inside. A reader reads again instead (reread).
func (s *Sim) write(w *World, c *Client) {
	if s.kind.reader(c) {
		s.reread(w, c)
		return
	}
	c.PC, c.Sub = pcRelease, 0
	if s.kind.fenced() && c.Token < w.Res.MaxToken {
		s.note(w, c.name(), fmt.Sprintf("write v%d token %d", c.Read+1, c.Token), fmt.Sprintf("refused (newest token %d)", w.Res.MaxToken))
		return
	}
	s.note(w, c.name(), fmt.Sprintf("write v%d token %d", c.Read+1, c.Token), "ok")
	if w.Violation == "" && w.Res.Version != c.Read {
		w.Violation = fmt.Sprintf("mutual exclusion: %s wrote over v%d, a write it never read (%s was inside at once and its write landed too)", c.acq(), w.Res.Version, w.Res.Writer)
	}
	if w.Violation == "" && w.Res.Reads != c.Entered {
		w.Violation = fmt.Sprintf("mutual exclusion: %s wrote after %s, a reader, entered while it was inside", c.acq(), w.Res.Reader)
	}
	if w.Violation == "" && s.kind.fenced() && c.Token == w.Res.WriteToken && w.Res.Writer != "" {
		w.Violation = fmt.Sprintf("fencing: %s wrote with token %d, the token %s wrote with", c.acq(), c.Token, w.Res.Writer)
	}
	w.Res.Version++
	w.Res.MaxToken = max(w.Res.MaxToken, c.Token)
	w.Res.WriteToken = c.Token
	w.Res.Writer = c.acq()
}

// reread is a reader's last step inside (readwrite): it reads the resource again, once its lease
// said it still holds. A version other than the one it read on entering is a write that landed
// while it was inside.
func (s *Sim) reread(w *World, c *Client) {
	c.PC, c.Sub = pcRelease, 0
	if w.Res.Version == c.Read {
		s.note(w, c.name(), fmt.Sprintf("read v%d again", c.Read), "unchanged")
		return
	}
	s.note(w, c.name(), fmt.Sprintf("read v%d again", c.Read), fmt.Sprintf("v%d", w.Res.Version))
	if w.Violation == "" {
		w.Violation = fmt.Sprintf("mutual exclusion: reader %s read v%d on entering and v%d before leaving (%s wrote while it was inside)",
			c.acq(), c.Read, w.Res.Version, w.Res.Writer)
	}
}
