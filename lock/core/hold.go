package core

import (
	"time"

	"github.com/seckill-lab/seckill/lock/script"
)

// Hold describes a kind whose lock is taken, renewed and given back by one script each: the
// commands it sends and what their replies mean. Redisson's RLock (NewReentrant, each part of a
// multilock), the two sides of its RReadWriteLock, and its two semaphores are Holds. The library's
// drivers (package lock) and `seckill simulate` both send what a Hold builds and read the replies
// with it, so neither says again what a kind sends or what its answer means.
type Hold interface {
	Acquire(a Ask) script.Call
	// Tried reads an attempt's reply (nil: Redis's nil) at now, by the holder's clock.
	Tried(reply any, now time.Time) Try
	Renew(a Ask) script.Call
	Release(a Ask) script.Call
	// Released: the release's reply says the holder held what it gave back (false: it did not,
	// ErrNotHeld in the library).
	Released(reply any) bool
	// Channel is where a release of key is announced; Rings, whether a message on it (its
	// payload) may have freed the lock, so that a waiter looks again.
	Channel(key string) string
	Rings(payload string) bool
	// Field is the field a's hold is kept under in Redis (its hash field, its permit's id).
	Field(a Ask) string
	// Shares: holders may hold at once (readers, permits), so a waiter that wins leaves the next
	// waiter of its process free to try at once.
	Shares() bool
}

// Ask is what a Hold's commands are built from: the holder's key, its field (a hash field, a
// permit's id), its lease and its clock now (the scripts that keep expiries take it, unix ms).
// Line, for RLock: the holder's process in the line kept beside Redisson's keys (nomination);
// its attempt queues the process until Until, and its release keeps it in line until Until (zero:
// it leaves). Sharded: the release's unlock message goes out by sharded pub/sub.
type Ask struct {
	Key, Field string
	Lease      time.Duration
	Now        time.Time
	Line       string
	Until      time.Time
	Sharded    bool
}

// Try is what an attempt's reply said: Held; or not, with how long the waiter may sleep unless a
// release wakes it first (Wait; < 0: until one does); Refused, never for this holder (readwrite's
// reader that asks for the write side); Odd, a reply of a shape the kind never answers.
type Try struct {
	Held    bool
	Wait    time.Duration
	Refused bool
	Odd     bool
}

// WinnerHint is how long a waiter that wins h's lock, held for lease, leaves the next waiter of its
// process asleep unless a release rings first: the lease, or nothing where the holders share (the
// next may try at once).
func WinnerHint(h Hold, lease time.Duration) time.Duration {
	if h.Shares() {
		return 0
	}
	return lease
}

// ExtraHolds is how many holds an acquisition gives back when it wins after an attempt whose
// reply was lost: its field counts counted holds in Redis, its process knows of own. The lost
// attempt may have run, and the next one, by the same owner, then re-entered it: one hold won,
// two counted, and the owner's one release would leave the lock held until its lease ends.
func ExtraHolds(counted, own int) int {
	if mutated(NoSettle) {
		return 0
	}
	return max(counted-own, 0)
}

// Renewed reads a renewal's reply, alike for every Hold: 1 renewed; anything else, the holder's
// hold is gone.
func Renewed(reply any) bool {
	n, ok := script.Integer(reply)
	return ok && n == 1
}

// unixMs is t as the scripts take an instant (0 for the zero time: none).
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func leaseMs(a Ask) int64 { return max(a.Lease.Milliseconds(), 1) }

// hashTried reads the acquire of a Redisson hash: nil held, else the lock's PTTL (HolderTTL).
func hashTried(reply any) Try {
	if reply == nil {
		return Try{Held: true}
	}
	n, ok := script.Integer(reply)
	if !ok {
		return Try{Odd: true}
	}
	return Try{Wait: HolderTTL(n)}
}

// RLock is Redisson's RedissonLock: a hash whose field is the owner's hold count.
var RLock Hold = rlock{}

type rlock struct{}

func (rlock) Acquire(a Ask) script.Call {
	if a.Line == "" {
		return script.ReentrantAcquireCall(a.Key, a.Field, leaseMs(a))
	}
	return script.RLockAcquireCall(a.Key, a.Field, leaseMs(a), a.Now.UnixMilli(), a.Line, unixMs(a.Until))
}

func (rlock) Tried(reply any, _ time.Time) Try { return hashTried(reply) }

func (rlock) Renew(a Ask) script.Call {
	return script.ReentrantRenewCall(a.Key, a.Field, leaseMs(a))
}

func (rlock) Release(a Ask) script.Call {
	if a.Line == "" {
		return script.ReentrantReleaseCall(a.Key, a.Field, leaseMs(a))
	}
	return script.RLockReleaseCall(a.Key, a.Field, leaseMs(a), a.Now.UnixMilli(), a.Line, unixMs(a.Until), a.Sharded)
}

// Released: nil is the release of a field the hash does not have.
func (rlock) Released(reply any) bool { return reply != nil }

// Channel: Redisson's unlock channel, where a release that frees the lock says UnlockMessage.
func (rlock) Channel(key string) string { return script.UnlockChannel(key) }
func (rlock) Rings(payload string) bool { return payload == script.UnlockMessage }
func (rlock) Field(a Ask) string        { return a.Field }
func (rlock) Shares() bool              { return false }

// ReadSide and WriteSide are Redisson's RReadWriteLock: one hash with its mode, a field per
// reader and one for the writer. Ask.Field is the owner's read field on both sides; the write
// side's field is script.WriteField of it.
var (
	ReadSide  Hold = rwSide{}
	WriteSide Hold = rwSide{write: true}
)

type rwSide struct{ write bool }

// upgradeReply is the write side's refusal of an owner that holds the read side.
const upgradeReply = -3

func (s rwSide) Acquire(a Ask) script.Call {
	if s.write {
		return script.WriteLockAcquireCall(a.Key, a.Field, leaseMs(a))
	}
	return script.ReadLockAcquireCall(a.Key, a.Field, leaseMs(a))
}

func (s rwSide) Tried(reply any, _ time.Time) Try {
	if n, _ := script.Integer(reply); s.write && reply != nil && n == upgradeReply {
		return Try{Refused: true}
	}
	return hashTried(reply)
}

func (s rwSide) Renew(a Ask) script.Call {
	if s.write {
		return script.ReentrantRenewCall(a.Key, script.WriteField(a.Field), leaseMs(a))
	}
	return script.ReadLockRenewCall(a.Key, a.Field, leaseMs(a))
}

func (s rwSide) Release(a Ask) script.Call {
	if s.write {
		return script.WriteLockReleaseCall(a.Key, script.WriteField(a.Field), leaseMs(a))
	}
	return script.ReadLockReleaseCall(a.Key, a.Field)
}

func (rwSide) Released(reply any) bool { return reply != nil }

// Channel: both sides announce on one channel, a read release that deletes the lock with
// UnlockMessage, a write release that frees it with ReadUnlockMessage; either rings either side.
func (rwSide) Channel(key string) string { return script.RWChannel(key) }
func (rwSide) Rings(payload string) bool {
	return payload == script.UnlockMessage || payload == script.ReadUnlockMessage
}

func (s rwSide) Field(a Ask) string {
	if s.write {
		return script.WriteField(a.Field)
	}
	return a.Field
}

// Shares: readers share the lock, a writer holds it alone.
func (s rwSide) Shares() bool { return !s.write }

// Semaphore is Redisson's RSemaphore, taking and giving back N permits at a time: a count with no
// owner, so nothing to renew (Renew is never asked) and a release is never refused.
type Semaphore struct{ N int }

func (s Semaphore) Acquire(a Ask) script.Call { return script.SemAcquireCall(a.Key, s.N) }

// Tried: 1 taken; 0 not enough, and only a release frees a permit: wait for its message.
func (Semaphore) Tried(reply any, _ time.Time) Try {
	switch n, ok := script.Integer(reply); {
	case !ok || n < 0 || n > 1:
		return Try{Odd: true}
	case n == 1:
		return Try{Held: true}
	}
	return Try{Wait: -1}
}

func (Semaphore) Renew(Ask) script.Call       { return script.Call{} }
func (s Semaphore) Release(a Ask) script.Call { return script.SemReleaseCall(a.Key, s.N) }
func (Semaphore) Released(any) bool           { return true }

// Channel: a release publishes the count of permits available; every such message rings.
func (Semaphore) Channel(key string) string { return script.SemChannel(key) }
func (Semaphore) Rings(string) bool         { return true }
func (Semaphore) Field(a Ask) string        { return a.Field }
func (Semaphore) Shares() bool              { return true }

// Permits is Redisson's RPermitExpirableSemaphore: Ask.Field is a permit's id, leased until
// Now + Lease.
var Permits Hold = permits{}

type permits struct{}

func (permits) Acquire(a Ask) script.Call {
	now := a.Now.UnixMilli()
	return script.PermitAcquireCall(a.Key, a.Field, now, now+a.Lease.Milliseconds())
}

func (permits) Tried(reply any, now time.Time) Try {
	held, retry, ok := PermitSaid(script.Integers(reply), now)
	return Try{Held: held, Wait: retry, Odd: !ok}
}

func (permits) Renew(a Ask) script.Call {
	now := a.Now.UnixMilli()
	return script.PermitRenewCall(a.Key, a.Field, now, now+a.Lease.Milliseconds())
}

func (permits) Release(a Ask) script.Call {
	return script.PermitReleaseCall(a.Key, a.Field, a.Now.UnixMilli())
}

// Released: 1, the permit was held and is back.
func (permits) Released(reply any) bool { return Renewed(reply) }

func (permits) Channel(key string) string { return Semaphore{}.Channel(key) }
func (permits) Rings(p string) bool       { return Semaphore{}.Rings(p) }
func (permits) Field(a Ask) string        { return a.Field }
func (permits) Shares() bool              { return true }
