package core

import (
	"maps"
	"time"
)

// Line is what one process (a Locker of lua or fenced) decides about the line kept in Redis, from
// which a release hands the lock to one waiter, whichever process it is in: whether a head must
// go to Redis at all (a lock handed to it is taken without a word; a waiter queued in Redis waits
// for its grant or its bound; a holder here will ring when it releases), how long it sleeps after
// an attempt, what a grant message means (the lock is one of its waiters', or nobody here has it
// and it is passed on), what a waiter that leaves must do, and what a release passes on to this
// process's next waiter (the cohort). The driver (lock/line.go) runs the scripts, hears the
// grants and keeps the mutex; the rules are lock/waiting.go's 13 to 21.
type Line struct {
	cohort  int
	waiting map[string]lineWaiter // by value, from the start of a wait to its end
	holders map[string]Holding    // by key: the holder here, until its release has run
	turns   map[string]int        // by key: releases in a row that handed the lock to this process
}

// Holding is a holder in this process: its value, and until when its lock lives at most.
type Holding struct {
	Value string
	Until time.Time
}

type lineWaiter struct {
	key      string
	lease    time.Duration
	grantTTL time.Duration
	deadline time.Time
	// granted: a release handed it the lock (with token; short: with grantTTL), sent at since.
	granted bool
	token   int64
	short   bool
	since   time.Time
	// queued: it is in the Redis line; until: it does not try again before then without a grant.
	// asked: its last attempt queues and its answer has not come (it may have queued); unknown:
	// an earlier one's never came.
	queued, asked, unknown bool
	until                  time.Time
	sent                   time.Time // when its last attempt was sent (its start before any)
}

// LineWin is how a waiter got the lock: its token, whether it came handed over with its grant TTL
// (Short), that TTL, and when the command that took it (or the release that handed it over) was
// sent.
type LineWin struct {
	Token    int64
	Short    bool
	GrantTTL time.Duration
	Since    time.Time
}

// LineLook is what the head does on its turn: take a lock handed to it (Won, with Win), wait
// (Wait > 0: no reason to try before then), or run the acquire script, queueing in Redis until
// QueueUntil (zero: a try that does not queue) with GrantTTL, how long a lock handed to it would
// live.
type LineLook struct {
	Won        bool
	Win        LineWin
	Wait       time.Duration
	QueueUntil time.Time
	GrantTTL   time.Duration
}

// LineNext is what a release passes on to this process's next waiter: its value, deadline, grant
// TTL and lease, and whether it may have the lock before the Redis line (its process's turn
// lasts: the cohort).
type LineNext struct {
	Value    string
	Deadline time.Time
	GrantTTL time.Duration
	Lease    time.Duration
	Before   bool
}

// NewLine makes a process's line with its cohort.
func NewLine(cohort int) Line {
	return Line{cohort: cohort, waiting: map[string]lineWaiter{}, holders: map[string]Holding{}, turns: map[string]int{}}
}

// Enter starts the wait of value for key's lock until deadline.
func (l *Line) Enter(now time.Time, key, value string, lease, grantTTL time.Duration, deadline time.Time) {
	l.waiting[value] = lineWaiter{key: key, lease: lease, grantTTL: grantTTL, deadline: deadline, sent: now}
}

// Look is the head's turn (subscribed: its process hears grants, so it may queue in Redis).
func (l *Line) Look(now time.Time, value string, subscribed bool) LineLook {
	w, ok := l.waiting[value]
	if !ok {
		return LineLook{}
	}
	h, here := l.holders[w.key]
	switch {
	case w.granted:
		return LineLook{Won: true, Win: LineWin{Token: w.token, Short: w.short, GrantTTL: w.grantTTL, Since: w.since}}
	case now.Before(w.until):
		return LineLook{Wait: w.until.Sub(now)}
	case here && now.Before(h.Until): // a holder here: its release rings
		return LineLook{Wait: h.Until.Sub(now)}
	}
	w.sent = now
	look := LineLook{GrantTTL: w.grantTTL}
	w.unknown = w.unknown || w.asked
	w.asked = subscribed
	if subscribed {
		look.QueueUntil = w.deadline
	}
	l.waiting[value] = w
	return look
}

// Tried: value's attempt did not take the lock, and read ttl (the holder's PTTL; < 0: none). It
// returns how long the head sleeps at most; a ring before then (a release here that handed the
// lock elsewhere) is no reason to try, only a grant or LookAgain is.
func (l *Line) Tried(now time.Time, value string, ttl, lostGrant time.Duration, subscribed bool) time.Duration {
	w, ok := l.waiting[value]
	if !ok {
		return LineSleep(ttl, MaxGrantTTL, lostGrant, subscribed)
	}
	d := LineSleep(ttl, w.grantTTL, lostGrant, subscribed)
	w.queued, w.asked, w.until = w.queued || subscribed, false, now.Add(d)
	l.waiting[value] = w
	return d
}

// Granted: a release handed key's lock to value (short: with its grant TTL, not its lease), sent
// at since (zero: not known here, counted from the waiter's last attempt). ring: one of this
// process's waiters has it now, and key's queue must ring; passOn: nobody here has the lock that
// was handed over, and it must be passed on.
func (l *Line) Granted(key, value string, token int64, short bool, since time.Time) (ring, passOn bool) {
	if l.holders[key].Value == value {
		return false, false // taken already by its own attempt
	}
	w, ok := l.waiting[value]
	if !ok {
		return false, true
	}
	if !w.granted {
		w.granted, w.token, w.short, w.since = true, token, short, since
		if since.IsZero() {
			w.since = w.sent
		}
		l.waiting[value] = w
	}
	return true, false
}

// Unsent: value's last attempt never reached Redis (a refused connection, a server that would not
// run it), so it queued nothing.
func (l *Line) Unsent(value string) {
	if w, ok := l.waiting[value]; ok {
		w.asked = false
		l.waiting[value] = w
	}
}

// Exit ends value's wait. With the lock (won) it holds key's lock from now for its lease. Without
// it: passOn, a lock handed to it that it did not take must be passed on; leave, its entry in the
// Redis line must be taken out: one of its attempts queued it, or may have (its answer never
// came). A value whose attempts never reached Redis, or never queued, leaves nothing to take out.
func (l *Line) Exit(now time.Time, key, value string, won bool) (passOn, leave bool) {
	w := l.waiting[value]
	delete(l.waiting, value)
	if won {
		l.holders[key] = Holding{Value: value, Until: now.Add(w.lease)}
		return false, false
	}
	if mutated(NoLeaveUnanswered) {
		return w.granted, !w.granted && w.queued
	}
	return w.granted, !w.granted && (w.queued || w.asked || w.unknown)
}

// Hold records value as key's holder here until until (a single attempt that won without
// waiting).
func (l *Line) Hold(key, value string, until time.Time) {
	l.holders[key] = Holding{Value: value, Until: until}
}

// Forget ends a hold of value on key here: true when it was the holder (key's head may try now).
func (l *Line) Forget(key, value string) bool {
	if l.holders[key].Value != value {
		return false
	}
	delete(l.holders, key)
	return true
}

// Next is what a release of key by value passes on to this process's next waiter, head (ok:
// somebody waits here): only a holder's release, with its process hearing grants, for a head not
// in the Redis line yet nor granted.
func (l *Line) Next(key, value, head string, ok, subscribed bool) (LineNext, bool) {
	if !ok || l.holders[key].Value != value || !subscribed {
		return LineNext{}, false
	}
	w, found := l.waiting[head]
	if !found || w.queued || w.granted {
		return LineNext{}, false
	}
	return LineNext{Value: head, Deadline: w.deadline, GrantTTL: w.grantTTL, Lease: w.lease,
		Before: l.turns[key]+1 < l.cohort || mutated(NoCohort)}, true
}

// Released: the release of key by value ran. inProcess: it handed the lock to this process's next
// waiter before the Redis line (a turn of the cohort); next is the waiter it was given ("": none)
// and to the value the lock went to: a next waiter that did not get it was queued behind in the
// Redis line by the release and waits for its grant.
func (l *Line) Released(now time.Time, key, value string, inProcess bool, next, to string) {
	l.Forget(key, value)
	if inProcess {
		l.turns[key]++
	} else {
		delete(l.turns, key)
	}
	if w, ok := l.waiting[next]; ok && next != to {
		w.queued, w.until = true, now.Add(w.grantTTL)
		l.waiting[next] = w
	}
}

// LookAgain makes every waiter look again at once (grants may have gone unheard).
func (l *Line) LookAgain() {
	for v, w := range l.waiting {
		w.until = time.Time{}
		l.waiting[v] = w
	}
}

// Clone is a copy that shares nothing with l.
func (l *Line) Clone() Line {
	return Line{cohort: l.cohort, waiting: maps.Clone(l.waiting), holders: maps.Clone(l.holders), turns: maps.Clone(l.turns)}
}
