package core

import "time"

// The library's timing, in one place: the drivers in package lock and `seckill simulate` read it
// here, so the simulator's clock runs the library's bounds, not copies of them. The rules that
// use them are in lock/waiting.go.
const (
	// LostGrantBound is the longest a waiter queued in Redis sleeps without looking: a grant or
	// nomination lost with a broken subscription costs this much at most.
	LostGrantBound = 250 * time.Millisecond
	// MaxGrantTTL bounds how long a lock handed to a waiter lives before its new holder pushes it
	// out to its lease (at a third of it): a waiter that is gone holds the line up this long at
	// most, not its whole wait.
	MaxGrantTTL = 500 * time.Millisecond
	// UnsubscribedPoll is how often a head retries while its process's grant subscription is not
	// confirmed yet (it does not queue in Redis meanwhile).
	UnsubscribedPoll = 5 * time.Millisecond
	// Cohort is how many holders in a row one process's waiters may be while waiters of other
	// processes wait in the Redis line.
	Cohort = 8
	// ConfirmWait is how long a head that has just subscribed waits for Redis to confirm before it
	// looks again anyway.
	ConfirmWait = 250 * time.Millisecond
	// Linger is how long an empty queue keeps its subscription.
	Linger = time.Second
	// AliveEvery and AliveFor: a process with waiters in a fair queue says it is alive every
	// AliveEvery, for AliveFor from then: after a crash its waiters are dropped within AliveFor +
	// AliveEvery, by the heartbeat of any live process with waiters. AliveFor is four beats, so a
	// live process on a busy machine (a beat late, or one that timed out) is not taken for dead:
	// that would cost its waiters their places, never the lock.
	AliveEvery = 125 * time.Millisecond
	AliveFor   = 500 * time.Millisecond
	// NoQuorumPoll is how long a Redlock waiter sleeps when no quorum of masters can free (masters
	// that do not answer, keys without a TTL).
	NoQuorumPoll = 2 * time.Second
)

// RidePause is how long an acquisition pauses after its n-th failure in a row on a server that
// may serve again soon (a refused or reset connection, a failover; n from 0) before it tries again
// with what is left of its wait: 10 ms, doubling, at most 200 ms. It tries again only when more
// than the pause is left of its wait (Rides).
func RidePause(n int) time.Duration {
	if n >= 5 {
		return RideLongest
	}
	return min(rideFirst<<n, RideLongest)
}

// Rides reports whether an acquisition with left of its wait pauses and tries again after a
// failure on a server that may serve again soon, or gives up.
func Rides(left, pause time.Duration) bool { return left > pause }

// BrokenRetry is the pause before a waiter makes its attempt again, in place at the head of its
// queue, after the failed-th (from 0) in a row failed on a connection that broke under it (the
// attempt may have run: its reply is what was lost): 20 ms, doubling. ok is false after three, or
// when the pause would reach past what is left of the wait; the acquisition then fails, and may
// ride (RidePause).
func BrokenRetry(failed int, left time.Duration) (pause time.Duration, ok bool) {
	pause = time.Duration(20<<failed) * time.Millisecond
	return pause, failed < 3 && pause < left
}

// The give-back policy: a command that gives something back (a release, a leave, an orphan's
// give-back) is bounded by ReleaseTimeout a send and, when it gets no answer, sent again every
// ReleaseRetry in the background, for ReleaseTimeout at least (lock/release_gate.go resend).
const (
	ReleaseRetry   = 100 * time.Millisecond
	ReleaseTimeout = 2 * time.Second
)

const (
	rideFirst = 10 * time.Millisecond
	// RideLongest is the longest pause of RidePause.
	RideLongest = 200 * time.Millisecond
)

// GrantTTL is how long a lock handed to a waiter lives before its holder pushes it out to its
// lease: its lease, its wait or maxGrant (MaxGrantTTL), the least, at least a millisecond.
func GrantTTL(lease, wait, maxGrant time.Duration) time.Duration {
	return max(min(lease, wait, maxGrant), time.Millisecond)
}

// LineSleep is how long a waiter of the line kept in Redis (lua, fenced) sleeps after an attempt
// that did not take the lock, at the latest: until the holder's lock runs out (ttl; < 0: a lock
// without a TTL, not one of the line's), no longer than a lock handed to it would live (grant) or
// lostGrant, and no longer than UnsubscribedPoll before its process hears grants.
func LineSleep(ttl, grant, lostGrant time.Duration, subscribed bool) time.Duration {
	if ttl < 0 {
		ttl = grant
	}
	if !subscribed {
		ttl = min(ttl, UnsubscribedPoll)
	}
	return max(min(ttl, grant, lostGrant), time.Millisecond)
}

// HolderTTL reads the PTTL an acquire script answers when the lock is taken (ms) as how long the
// waiter may sleep: -2, no such key (it expired or was released since the script found it taken;
// the in-process Redis even lets time pass inside a script), means free now, so try again at
// once; -1, a key without TTL, is unknown (< 0).
func HolderTTL(pttlMs int64) time.Duration {
	switch {
	case pttlMs == -2:
		return 0
	case pttlMs < 0:
		return -time.Millisecond
	default:
		return time.Duration(pttlMs) * time.Millisecond
	}
}

// QueuedSleep is how long a waiter whose process is queued in Redis (reentrant's line, N3)
// sleeps after an attempt: the holder's TTL (< 0: unknown), at most lostGrant, so a nomination
// lost with a broken subscription costs that much at most.
func QueuedSleep(ttl, lostGrant time.Duration) time.Duration {
	if ttl < 0 || ttl > lostGrant {
		return lostGrant
	}
	return ttl
}
