package simulate

import (
	"slices"
	"sort"
	"strconv"

	"github.com/seckill-lab/seckill/lock/core"
)

// lockName is the lock every client takes.
const lockName = "lock:sku"

// kind is one lock's client, as step machines: what each step sends and decides.
type kind interface {
	masters() int
	lockKey() string
	fenced() bool   // the resource refuses writes with a token older than the newest
	watchdog() bool // a holder's lease is renewed by a watchdog (core.Life)
	acquire(s *Sim, w *World, c *Client)
	// renew is one step of a renewal round the lease's life asked for; done when the round is
	// over, with how it went.
	renew(s *Sim, w *World, c *Client) (done bool, out renewal)
	release(s *Sim, w *World, c *Client)
	deliver(s *Sim, w *World, c *Client, m msg)
	passOn(s *Sim, w *World, c *Client)
	route(w *World, k int, channel string) []int
	leftoverOK(key string) bool
	expects(err error) bool // an error reply the kind's steps handle (any other is a violation)
	// queue is the library's in-process queue of the kind (queue.go); false: the kind waits on
	// its own (the lab's polling modes).
	queue() (core.QueueConfig, bool)
	// timerDue performs a waiter's step on a timer of the kind's own, when one is due (fair's
	// heartbeat), and reports whether it did.
	timerDue(s *Sim, w *World, c *Client) bool
	// perMaster: a process has a queue and a subscription for each master, the queue of the part
	// its client asks (c.I) and of the master a message comes from (multilock); else one.
	perMaster() bool
	// heldHint is how long c, a waiter that won, leaves the next head of its queue asleep, unless
	// rung: the lease, as the library's handoff tells its queue, or 0 where the holders share
	// (core.Hold.Shares: readers, permits).
	heldHint(s *Sim, c *Client) int64
	// wakes: a release wakes a waiter at once (a message or a hand-over), so a lock must not lie
	// idle while one sleeps (liveness.go checkPrompt); false for the polling kinds.
	wakes() bool
	setup(s *Sim, w *World)          // Redis before the first step (atomic's stock)
	settled(s *Sim, w *World) string // the kind's own verdict once every client is done ("": none)
	// The liveness check's bounds (liveness.go): how many masters without the lock key make
	// it free; the longest a correct waiter sleeps without looking again while the lock is
	// free and no fault is in effect (G); how long a lost pub/sub message may keep one asleep;
	// how long after a master down comes back a waiter may still sleep on its silence.
	freeNeeds() int
	// holds: key k, alive at x, shows that value v holds the lock (by default the lock key's
	// string, or a field of Redisson's hash).
	holds(k keySnap, v string, x int64) bool
	// reader: c's acquisition only reads the resource (readwrite's readers): it reads it again
	// before leaving instead of writing it (client.go reread).
	reader(c *Client) bool
	// admits: the lock, though held, would let waiter c in now (readwrite: a reader, while no
	// writer holds it), so c must not sleep through a clock move either (liveness.go
	// checkPrompt).
	admits(w *World, c *Client) bool
	// asks: c's next step sends one of a round of commands to every master at once: the masters
	// not asked yet in the round, whose order the scheduler picks (0: a plain step).
	asks(w *World, c *Client) uint8
	relook(s *Sim) int64
	lostBound(s *Sim) int64
	downBound() int64
	// counted is the Hold c takes when it counts an owner's holds (Redisson's hash): an attempt
	// whose reply is lost may have counted one (FaultReplyLost, settleHolds).
	counted(c *Client) (core.Hold, bool)
	// giveBack sends once what c's process gives back in the background (Client.GiveBack): false
	// when it got no answer.
	giveBack(s *Sim, w *World, c *Client, what string) bool
}

// base gives a kind the defaults: one master, no pub/sub, no watchdog, no fencing.
type base struct{}

func (base) masters() int                                      { return 1 }
func (base) lockKey() string                                   { return lockName }
func (base) fenced() bool                                      { return false }
func (base) watchdog() bool                                    { return false }
func (base) renew(s *Sim, w *World, c *Client) (bool, renewal) { return true, renewRefused }
func (base) deliver(s *Sim, w *World, c *Client, m msg)        {}
func (base) passOn(s *Sim, w *World, c *Client)                { c.PassOn = "" }
func (base) route(w *World, k int, channel string) []int       { return nil }
func (base) leftoverOK(key string) bool                        { return false }
func (base) expects(error) bool                                { return false }
func (base) counted(*Client) (core.Hold, bool)                 { return nil, false }
func (base) giveBack(*Sim, *World, *Client, string) bool       { return true }
func (base) queue() (core.QueueConfig, bool)                   { return core.QueueConfig{}, false }
func (base) wakes() bool                                       { return false }
func (base) timerDue(*Sim, *World, *Client) bool               { return false }
func (base) perMaster() bool                                   { return false }
func (base) heldHint(s *Sim, _ *Client) int64                  { return ms(s.cfg.Lease) }
func (base) setup(s *Sim, w *World)                            {}
func (base) settled(s *Sim, w *World) string                   { return "" }
func (base) freeNeeds() int                                    { return 1 }
func (base) asks(*World, *Client) uint8                        { return 0 }
func (base) holds(k keySnap, v string, _ int64) bool {
	return k.Key == lockName && (k.Str == v || slices.Contains(k.Hash, v))
}
func (base) downBound() int64                { return 0 }
func (base) reader(*Client) bool             { return false }
func (base) admits(w *World, c *Client) bool { return false }

// relook of the polling modes: a failed attempt is tried again after the retry delay.
func (base) relook(s *Sim) int64 { return ms(s.cfg.Retry) }

// lostBound: a waiter that misses a message looks again within its relook bound.
func (base) lostBound(s *Sim) int64 { return s.kind.relook(s) }

// kinds are the simulated kinds by name.
var kinds = map[string]kind{}

// KindNames lists them, sorted.
func KindNames() []string {
	var n []string
	for k := range kinds {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// retryOrGiveUp ends a failed attempt of a polling client: it tries again after the retry
// delay, or gives up once its wait has run out.
func (s *Sim) retryOrGiveUp(w *World, c *Client) {
	if w.Now+ms(s.cfg.Retry) > c.Deadline {
		s.note(w, c.name(), "give up", "wait over")
		s.giveUp(w, c)
		return
	}
	c.sleep(w.Now + ms(s.cfg.Retry))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func asInt(v any) (int64, bool) {
	n, ok := v.(int)
	return int64(n), ok
}
