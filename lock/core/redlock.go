package core

import (
	"math"
	"slices"
	"time"
)

// QuorumFree is how long a Redlock waiter sleeps after a failed attempt when no release rings
// (lock/redlock.go drives it, as does `seckill simulate`'s redlock kind): until a quorum of the
// masters could grant the lock, the quorum-th shortest of the key's PTTLs (ttls, one a master:
// -2 a master without the key, which counts 0; -1 a key without TTL, never freed; NoAnswer a
// master that did not answer, never freed either). It is -1 when a quorum is free already (a split
// vote, or a holder that has just released): look again after the poll delay. Where no quorum
// can ever free, NoQuorumPoll.
func QuorumFree(ttls []time.Duration, quorum int) time.Duration {
	const never = time.Duration(1<<63 - 1)
	left := make([]time.Duration, len(ttls))
	for i, d := range ttls {
		switch {
		case d == -1 || d == NoAnswer:
			left[i] = never
		case d < 0:
			left[i] = 0
		default:
			left[i] = d
		}
	}
	slices.Sort(left)
	switch q := left[quorum-1]; q {
	case 0:
		return -1
	case never:
		return NoQuorumPoll
	default:
		return q
	}
}

// NoAnswer stands for a PTTL that a master did not answer (QuorumFree).
const NoAnswer = time.Duration(-1 << 62)

// Redlock is one Redlock attempt as a machine of rounds, in the spirit of the lease's Life: each
// round asks every master at once, and its answers, all in, decide the next round (Round).
// lock/redlock.go drives it with redsync and go-redis; `seckill simulate`'s redlock kind drives
// it one master a step. The SET round and its give-back are redsync's; the rest is the library's:
//
//   - a won attempt is held, or, fenced (WithFencingTokens), draws its token in two rounds: the
//     counter read where the lock is still this attempt's, then raised to the largest read plus
//     one; either round short of a quorum gives the lock back, and the attempt counts as lost;
//   - a lost attempt sleeps until this process's own lease of the key runs out (its release rings
//     the waiter sooner), or else until a quorum of the masters could be free (QuorumFree, from a
//     PTTL round).
//
// It is a value (the simulator copies its worlds whole).
type Redlock struct {
	Quorum int
	Fence  bool
	Round  RedlockRound
	// Token: the largest counter read (RedlockRead), then the token (RedlockRaise, RedlockHeld).
	Token int64
	// Sleep: once RedlockSlept, how long the waiter sleeps before its next attempt, unless a
	// release rings it (-1: a quorum is free, look again after the poll delay).
	Sleep time.Duration
}

// RedlockRound is the round a Redlock attempt is in, or how it ended.
type RedlockRound uint8

const (
	RedlockSet     RedlockRound = iota // SET NX PX on every master (redsync), a lost attempt given back
	RedlockPTTL                        // lost: the key's PTTL on every master
	RedlockRead                        // won, fenced: the token counter read (script.RedlockTokenReadCall)
	RedlockRaise                       // the counter raised to Token (script.RedlockTokenRaiseCall)
	RedlockUnfence                     // a fencing round short of a quorum: the lock given back on every master
	RedlockHeld                        // over: the lock is held (with Token, fenced)
	RedlockSlept                       // over: the attempt failed; sleep Sleep
)

// NoReply is a master's answer to a fencing round that did not come.
const NoReply = math.MinInt64

// NewRedlock is an attempt of a lock kept on masters with quorum (a majority), fenced or not.
func NewRedlock(quorum int, fence bool) Redlock { return Redlock{Quorum: quorum, Fence: fence} }

// Set is the SET round's outcome: won (a quorum and validity left) or not; here is how long a
// lease of this process still holds the key (0: none).
func (r *Redlock) Set(won bool, here time.Duration) {
	switch {
	case won && r.Fence:
		r.Round, r.Token = RedlockRead, 0
	case won:
		r.Round = RedlockHeld
	case here > 0:
		r.Round, r.Sleep = RedlockSlept, here
	default:
		r.Round = RedlockPTTL
	}
}

// PTTLs is the PTTL round's answers, one a master (NoAnswer where none came).
func (r *Redlock) PTTLs(ttls []time.Duration) {
	r.Round, r.Sleep = RedlockSlept, QuorumFree(ttls, r.Quorum)
}

// Answered is a fencing round's replies, one a master (NoReply where none came): the read's
// counters (-1 where the lock is not this attempt's), or the raise's 1 where it raised.
func (r *Redlock) Answered(replies []int64) {
	n := 0
	for _, v := range replies {
		switch {
		case r.Round == RedlockRead && v >= 0:
			n, r.Token = n+1, max(r.Token, v)
		case r.Round == RedlockRaise && v == 1:
			n++
		}
	}
	switch {
	case n < r.Quorum:
		r.Round = RedlockUnfence
	case r.Round == RedlockRead && mutated(NoTokenStep):
		r.Round = RedlockRaise
	case r.Round == RedlockRead:
		r.Round, r.Token = RedlockRaise, r.Token+1
	default:
		r.Round = RedlockHeld
	}
}

// GaveBack: the lock not fenced on a quorum was given back; the attempt counts as lost, and the
// waiter looks again after the poll delay.
func (r *Redlock) GaveBack() { r.Round, r.Sleep = RedlockSlept, -1 }

// Over reports whether the attempt is over (held or slept).
func (r *Redlock) Over() bool { return r.Round >= RedlockHeld }
