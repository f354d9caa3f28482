package core

import "time"

// The fair lock's decisions (its rules F1–F7 are in lock/fair.go, which drives them, as does
// `seckill simulate`'s fair kind): how long a waiter sleeps after an attempt that queued it, and
// what a heartbeat's reading asks of the process that beat.

// FairNapMin is the shortest a fair waiter sleeps after an attempt that queued it, so a stale
// estimate of its turn is no busy loop.
const FairNapMin = 5 * time.Millisecond

// FairNap is how long a fair waiter sleeps after an attempt that queued it when nothing rings
// (F3): until its estimated turn (due, the acquire script's answer), at least FairNapMin, at most
// its thread wait: its deadline in Redis does not count the hold of whoever took the lock ahead
// of it, so a long hold can make the next script drop it from the queue, live as it is, and
// looking again within a thread wait puts it back in line.
func FairNap(due, threadWait time.Duration) time.Duration {
	return min(max(due, FairNapMin), threadWait)
}

// FairLeavesNow: a fair waiter whose attempt failed leaves Redisson's queue now. After a
// transient failure (transient: its Locker rides, with the same owner) it keeps its place for the
// next attempt instead, and leaves only if the acquisition ends without the lock: a leave sent
// during the ride could land after that attempt took the place again, and take it out.
func FairLeavesNow(transient bool) bool { return !transient || mutated(NoKeepPlace) }

// FairBeat is what one heartbeat's reading asks of the process that beat: the waiters to ring
// (Ring, each if it waits in this process; All: every one), and when to beat again (Next).
type FairBeat struct {
	Ring []string
	All  bool
	Next time.Duration
}

// FairBeatSaid reads a heartbeat's answer (script/lua/fair_beat.lua): the queue's head after the
// dead were dropped, the lock's PTTL (-2: free), and the lock's one holder when it is a field of
// this process ("" otherwise).
//
//   - A holder of this process may be a waiter whose grant message was lost (F7): it is rung, not
//     granted, since the reading may be stale (that waiter may have sold and left, and another of
//     the same owner waits now); its own attempt takes a lock handed to it as it is.
//   - A free lock rings the head, which may take it (a dead holder's lock has expired, or the dead
//     ahead of it were dropped); a free lock with nobody queued, though this process has waiters,
//     means Redis lost the queue (a restart without its data): they all look again now.
//   - A lock about to expire (one handed to a waiter that may be dead) brings the next beat
//     forward to just after it does.
func FairBeatSaid(head string, pttl int64, holder string) FairBeat {
	b := FairBeat{Next: AliveEvery}
	if holder != "" && !mutated(NoBeatRing) {
		b.Ring = append(b.Ring, holder)
	}
	switch ttl := time.Duration(pttl) * time.Millisecond; {
	case pttl == -2 && head != "":
		b.Ring = append(b.Ring, head)
	case pttl == -2:
		b.All = true
	case pttl > 0 && ttl < b.Next:
		b.Next = ttl + 2*time.Millisecond
	}
	return b
}

// Rings reports whether the beat rings the waiter with field.
func (b FairBeat) Rings(field string) bool {
	for _, f := range b.Ring {
		if f == field {
			return true
		}
	}
	return b.All
}
