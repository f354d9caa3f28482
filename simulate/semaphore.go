package simulate

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// semKind is the library's NewSemaphore (Redisson's RSemaphore; expirable false) and
// NewExpirableSemaphore (Redisson's RPermitExpirableSemaphore, its permits leased and watched:
// true), with the library's scripts, one permit set before the first step, and every client
// taking one: a binary semaphore, so the resource's checks (no lost update) apply as to a lock.
// The kind's own checks: the count stays within 0 and the limit with the permits held, and once
// every client is done the limit is whole again (RSemaphore breaks it when a holder dies: its
// permit never comes back, Redisson's documented pitfall).
type semKind struct {
	base
	expirable bool
}

// semLimit is how many permits the semaphore has.
const semLimit = 1

var (
	semTimeout = script.PermitKeys(lockName)[1]
)

func (k semKind) watchdog() bool { return k.expirable }

// queue: a waiter waits in its process's queue, rung by every message on the semaphore's
// channel, which its process hears only once subscribed.
func (semKind) queue() (core.QueueConfig, bool) { return queueConfig(false), true }
func (semKind) wakes() bool                     { return true }
func (semKind) downBound() int64                { return rideBound }
func (k semKind) heldHint(s *Sim, c *Client) int64 {
	return ms(core.WinnerHint(k.hold(), s.cfg.Lease))
}

// leftoverOK: the count stays; so do expired permits of the expirable one, which come back to the
// count only when a script next runs (as Redisson's do).
func (k semKind) leftoverOK(key string) bool {
	return key == lockName || (k.expirable && key == semTimeout)
}

// holds: an expirable permit is held while its id is in the timeout set with an expiry after x.
func (k semKind) holds(key keySnap, v string, x int64) bool {
	if !k.expirable || key.Key != semTimeout {
		return false
	}
	for i := 0; i+1 < len(key.ZSet); i += 2 {
		if key.ZSet[i] == v {
			at, _ := strconv.ParseFloat(key.ZSet[i+1], 64)
			return int64(at) > x
		}
	}
	return false
}

// setup sets the permits, as TrySetPermits does.
func (semKind) setup(s *Sim, w *World) {
	s.gen++
	w.Masters[0].Gen = s.gen
	w.Masters[0].Data = redisState{{Key: lockName, Type: "string", Str: itoa(semLimit)}}
}

// acquire is one attempt (semaphore.go Acquire's try): a permit taken, or a sleep until a release
// rings (RSemaphore), or until the earliest expiry of a permit held (expirable).
func (k semKind) acquire(s *Sim, w *World, c *Client) {
	if c.Over {
		s.note(w, c.name(), "give up", "the wait is over") // a step of its own: the trace records each
		s.giveUp(w, c)
		return
	}
	c.Sent = w.Now
	switch t, answered := s.attempt(w, c, 0, k.hold(), s.ask(w, c)); {
	case t.Held && !k.expirable:
		s.won(w, c)
		s.enter(w, c, 0)
	case t.Held:
		s.hold(w, c, 0, w.Now, ms(s.cfg.Lease))
	case !answered:
		s.ride(w, c)
	case t.Odd:
		s.failed(w, c, -1)
	default:
		s.failed(w, c, waitMs(t.Wait))
	}
	k.check(s, w, c)
}

// hold is the semaphore as the library takes it: one permit at a time.
func (k semKind) hold() core.Hold {
	if k.expirable {
		return core.Permits
	}
	return core.Semaphore{N: 1}
}

func (k semKind) renew(s *Sim, w *World, c *Client) (bool, renewal) {
	return true, renewOutcome(s.call(w, c, 0, k.hold().Renew(s.ask(w, c))))
}

func (k semKind) release(s *Sim, w *World, c *Client) {
	s.call(w, c, 0, k.hold().Release(s.ask(w, c)))
	k.check(s, w, c)
	s.released(w, c)
}

// route: the semaphore's channel rings every process that waits (its count of permits is no
// one's in particular).
func (k semKind) route(w *World, _ int, channel string) []int {
	return waitersOn(w, channel, k.hold().Channel(lockName))
}

// waitersOn is the mailbox of every process with a live client still acquiring when channel is
// ch, the one channel a kind's releases are published on; nobody otherwise.
func waitersOn(w *World, channel, ch string) []int {
	if channel != ch {
		return nil
	}
	var to []int
	for _, c := range w.Clients {
		if box := w.mailbox(&c); !c.Crashed && !c.Done && c.PC == pcAcquire && !slices.Contains(to, box) {
			to = append(to, box)
		}
	}
	return to
}

func (k semKind) deliver(s *Sim, w *World, c *Client, m msg) { heard(s, w, c, 0, k.hold(), m) }

// heard: a message on the Hold's channel rings queue part of c's process when the Hold says it
// may have freed the lock (its subscriber in the library drops the others).
func heard(s *Sim, w *World, c *Client, part int, h core.Hold, m msg) {
	if h.Rings(m.Payload) {
		s.ring(w, c, part)
	}
}

// permits counts the permits available and those held unexpired at x (the expirable semaphore's
// expired ones come back to the count when a script next runs).
func (k semKind) permits(w *World, x int64) (free, held, expired int64) {
	for _, key := range w.Masters[0].Data {
		switch key.Key {
		case lockName:
			free, _ = strconv.ParseInt(key.Str, 10, 64)
		case semTimeout:
			for i := 0; i+1 < len(key.ZSet); i += 2 {
				at, _ := strconv.ParseFloat(key.ZSet[i+1], 64)
				if int64(at) > x {
					held++
				} else {
					expired++
				}
			}
		}
	}
	return free, held, expired
}

// check: the count never goes below 0, and the count with the permits held never above the
// limit.
func (k semKind) check(s *Sim, w *World, c *Client) {
	free, held, expired := k.permits(w, w.Now)
	if w.Violation == "" && (free < 0 || free+held+expired > semLimit) {
		w.Violation = fmt.Sprintf("permits: after %s's step the semaphore counts %d available and %d held, limit %d", c.acq(), free, held+expired, semLimit)
	}
}

// settled: every client done or dead, past every lease: the limit is whole again.
func (k semKind) settled(s *Sim, w *World) string {
	free, held, expired := k.permits(w, w.Now)
	if free+expired != semLimit || held != 0 {
		return fmt.Sprintf("permits: the semaphore ends with %d of its %d permits (%d held past every lease): a permit that never comes back",
			free+expired, semLimit, held)
	}
	return ""
}

func init() {
	kinds["semaphore"] = semKind{}
	kinds["permits"] = semKind{expirable: true}
}
