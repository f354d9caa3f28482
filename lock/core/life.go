// Package core holds the lock library's decisions as deterministic state machines, in the spirit
// of etcd raft's Step and Ready: events go in (a command's outcome, a timer, a caller's call),
// what to do comes out (a command to send, a timer to arm, a channel to close). It starts no
// goroutine, takes no mutex, reads no clock and sends no command: the caller gives it the time
// and performs what it asks, so the same events always give the same decisions, in the library
// as in a simulation.
package core

import (
	"errors"
	"time"
)

// ErrRanOut is why a lease was lost when no renewal was answered before it ran out by the
// holder's clock (a renewal may still be blocked on a server that does not answer).
var ErrRanOut = errors.New("lock: the lease ran out before a renewal was answered")

// Margin is how much earlier than its lock can expire in Redis a lease counts itself lost: 1% of
// its TTL plus 2 ms, Redlock's clock drift allowance, for a clock that runs slower than Redis's
// and a timer that fires late.
func Margin(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// SafeEnd is when a lock of the given TTL, set by a command sent at sent, surely still lives in
// Redis: the lease counts itself lost then.
func SafeEnd(sent time.Time, ttl time.Duration) time.Time { return sent.Add(ttl - Margin(ttl)) }

// Life is one lease's life: when to renew it, when it is lost, when it is over. One Life serves
// every kind: with renewal (a watchdog, every lease/3 while held) or without (the lease runs out
// unless renewed by hand), and in both a lock that came with less than its lease (handed over
// short) is pushed out to the lease a third of the way into what it has. A renewal that fails is
// tried again after a pause while the lease lasts. Its end is a deadline of its own, independent
// of any command in flight. A Life is a value with no pointers: copying it copies the lease's
// whole state (a simulator keeps one per simulated holder and clones them with their world).
type Life struct {
	lease    time.Duration // what a renewal sets
	ttl      time.Duration // what the lock had from the last success (less when handed over short)
	watch    bool          // renewal on
	due      bool          // a renewal is due at next (watch, or the push of a short lock)
	end      time.Time     // when the lease counts itself lost
	next     time.Time     // when the next renewal is due
	renewing bool          // a renewal is in flight
	state    state
	renewals int64
}

type state int

const (
	held state = iota
	lost
	ended
)

// Ready is what the caller must do after an event.
type Ready struct {
	// Renew: send one renewal now, and report its outcome with Renewed, Refused or Failed,
	// with the time it was sent.
	Renew bool
	// Wake: call Tick at this moment (zero: no timer is needed any more).
	Wake time.Time
	// Lost: the lease is lost now (once); Why says why.
	Lost bool
	Why  error
}

// NewLife starts the life of a lease taken at now whose lock surely lives until end (SafeEnd of
// the send of the command that set it and its TTL ttl), renewed to lease by each renewal when
// watch. A lock with less than its lease is pushed out to it a third of the way into its TTL,
// watched or not.
func NewLife(now, end time.Time, ttl, lease time.Duration, watch bool) (*Life, Ready) {
	l := &Life{}
	return l, l.Start(now, end, ttl, lease, watch)
}

// Start is NewLife on a Life of the caller's (a field of a driver), which it overwrites.
func (l *Life) Start(now, end time.Time, ttl, lease time.Duration, watch bool) Ready {
	*l = Life{lease: lease, ttl: min(ttl, lease), watch: watch && !mutated(NoRenewal), end: end}
	if l.watch || (l.ttl < lease && !mutated(NoPush)) {
		l.due, l.next = true, now.Add(max(l.ttl/3, time.Millisecond))
	}
	return l.Tick(now)
}

// Stale reports whether a lock just taken, which surely lives until end by a TTL of ttl, has so
// little of it left by this process's count (less than a third) that it must be renewed before
// its holder is told it holds it: a lock handed over from another process counts its TTL from the
// waiter's last attempt, and after a long wait little or none of it may be left by that count.
func Stale(now, end time.Time, ttl time.Duration) bool { return end.Sub(now) < ttl/3 }

// Tick is the timer's event: the lease is lost when its end has come, and a renewal is due at
// its time.
func (l *Life) Tick(now time.Time) Ready {
	if l.state != held {
		return Ready{}
	}
	if !now.Before(l.end) && !mutated(NeverLost) {
		return l.lose(ErrRanOut)
	}
	var r Ready
	if l.due && !l.renewing && !now.Before(l.next) {
		l.renewing, r.Renew = true, true
	}
	r.Wake = l.wake()
	return r
}

// Renewed: the renewal Ready asked for was answered, and keeps the lock until end by the
// caller's reckoning (SafeEnd of its send and the lease, or Redlock's validity): with a watchdog
// the next renewal is due a third of a lease from now; without one, the push is done.
func (l *Life) Renewed(now, end time.Time) Ready {
	l.renewing = false
	if l.state != held {
		return Ready{}
	}
	if l.watch {
		l.renewals++
	}
	l.due, l.next = l.watch, now.Add(max(l.lease/3, time.Millisecond))
	return l.Refreshed(now, end)
}

// Refreshed: a renewal of the caller's own (a Refresh) was answered, and keeps the lock until
// end: a push still due is not needed any more.
func (l *Life) Refreshed(now, end time.Time) Ready {
	if l.state != held {
		return Ready{}
	}
	if !l.watch {
		l.due = false
	}
	l.ttl = l.lease
	if end.After(l.end) {
		l.end = end
	}
	return l.Tick(now)
}

// Check loses the lease when its end has come, and does nothing else: for a holder that looks at
// Lost before its write, whatever the timer.
func (l *Life) Check(now time.Time) Ready {
	if l.state == held && !now.Before(l.end) && !mutated(NeverLost) {
		return l.lose(ErrRanOut)
	}
	return Ready{}
}

// Until is when the lease counts itself lost, as things stand.
func (l *Life) Until() time.Time { return l.end }

// Refused: Redis said the lock is no longer this lease's.
func (l *Life) Refused(why error) Ready {
	l.renewing = false
	if l.state != held {
		return Ready{}
	}
	return l.lose(why)
}

// Failed: a renewal got no answer (or a transient error): it is sent again after a pause while
// the lease lasts; Tick loses the lease when its end comes first.
func (l *Life) Failed(now time.Time) Ready {
	l.renewing = false
	if l.state != held {
		return Ready{}
	}
	l.next = now.Add(min(max(l.ttl/30, time.Millisecond), 50*time.Millisecond))
	return l.Tick(now)
}

// End: the lease was given back; nothing more is sent, and it is not lost.
func (l *Life) End() {
	if l.state == held {
		l.state = ended
	}
}

// Over reports whether the lease is lost or given back.
func (l *Life) Over() bool { return l.state != held }

// Renewals counts the watchdog's renewals answered so far (a push is not one).
func (l *Life) Renewals() int64 { return l.renewals }

func (l *Life) lose(why error) Ready {
	l.state = lost
	return Ready{Lost: true, Why: why}
}

// wake is the next moment Tick has something to decide: the end, or the next renewal.
func (l *Life) wake() time.Time {
	if l.due && !l.renewing && l.next.Before(l.end) {
		return l.next
	}
	if mutated(NeverLost) {
		return time.Time{}
	}
	return l.end
}
