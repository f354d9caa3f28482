package lock

import (
	"slices"

	"github.com/seckill-lab/seckill/lock/script"
)

// keyNamer is implemented by every kind: the Redis keys its lock called name may use.
type keyNamer interface {
	keys(name string) []string
}

// Keys lists every Redis key the lock called name may use with this Locker's kind and options:
// the lock key itself and the keys the kind keeps beside it (waiter lines, queues, deadlines,
// grant and lag hashes) and its fencing-token counters, whether or not they exist right now.
// Multilock and Redlock use the same names on every master. Channels are not keys and are not
// listed. Deleting every key listed removes every trace of the lock; but deleting a token
// counter resets the lock's fencing tokens, so the next holder draws a token a resource may
// already have seen: delete one only together with the resource's record of the newest token.
func (l *Locker) Keys(name string) []string {
	if l == nil {
		return nil
	}
	if k, ok := l.impl.(keyNamer); ok {
		return k.keys(name)
	}
	return []string{name}
}

func (l *valueLocker) keys(name string) []string {
	if l.fenced {
		return slices.Clone(l.line.scriptKeys(name))
	}
	return script.LineOf(name)
}

func (l *reentrantLocker) keys(name string) []string {
	keys := []string{name}
	if l.nom != nil {
		keys = script.LineOf(name)
	}
	if l.fenced {
		keys = append(keys, l.rfencedCall(name, "", 0).Keys[1:]...)
	}
	return keys
}

func (l *fairLocker) keys(name string) []string { return script.FairKeys(name) }

func (m *multiLocker) keys(name string) []string { return m.parts[0].keys(name) }

func (l *redlockLocker) keys(name string) []string {
	if l.fence {
		return []string{name, script.RedlockTokenKey(name)}
	}
	return []string{name}
}
