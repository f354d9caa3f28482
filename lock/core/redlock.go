package core

import (
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
