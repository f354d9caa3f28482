package script

import "strings"

// Calls: each script's keys and arguments, in the order of its header, written once. Package lock
// sends these; the simulator runs the same ones on its in-process Redis, so neither restates a
// script's wire protocol. A Call's numbers are milliseconds (durations) or unix milliseconds
// (instants); a flag is a bool, sent as 1 or 0.

// A Call is one run of a script: its name (a key of Sources), its keys and its arguments.
type Call struct {
	Script string
	Keys   []string
	Args   []any
}

// Keys of a lock named name, beside the lock key itself.

// LineOf is lock name and its line in Redis (line.lua): the list of who waits and their
// deadlines, in the lock's hash slot. It is RLockAcquire's keys.
func LineOf(name string) []string {
	return []string{name, Prefixed(LinePrefix, name), Prefixed(LineWaitersPrefix, name)}
}

// LineKeys are the keys of LineAcquire and LineRelease: LineOf and the token counter (the lock
// key again for NewLua, whose scripts draw no token).
func LineKeys(name, token string) []string { return append(LineOf(name), token) }

// NominationKeys are the keys of RLockRelease and RLockPass: LineOf, Redisson's unlock channel
// and the start of the processes' nomination channels ("<start>:<id>").
func NominationKeys(name string) []string {
	return append(LineOf(name), UnlockChannel(name), Prefixed(NominationChannelPrefix, name))
}

// NominationChannel is the channel on which NewReentrant's process id is nominated for lock name.
func NominationChannel(name, id string) string {
	return Prefixed(NominationChannelPrefix, name) + ":" + id
}

// UnlockChannel is Redisson's unlock channel of lock name. Like every name here it follows
// Redisson's RedissonObject.prefixName: a name with a hash tag keeps it, any other is wrapped in
// braces, so the channel hashes like the lock key.
func UnlockChannel(name string) string { return Prefixed(RedissonChannelPrefix, name) }

// FairKeys are the keys of FairAcquire and FairBeat: the lock, Redisson's queue and timeouts, and
// this library's own three. The heartbeats: each process with waiters in the queue and the time
// until which it is surely alive (fair_alive.lua), so a dead process's waiters are dropped at
// once, not one thread wait after another. The grants: the waiters that take a lock a release in
// another process handed them, with its TTL (Redisson clients are never in it: they are told
// with the unlock message, as Redisson's release expects). The lag: the move-ups the waiters
// behind the first still owe (fair_lag.lua). FairRelease and FairCancel take the unlock channel
// fourth (fairChannelKeys).
func FairKeys(name string) []string {
	return []string{name, Prefixed(RedissonQueuePrefix, name), Prefixed(RedissonTimeoutPrefix, name),
		Prefixed(FairAlivePrefix, name), Prefixed(FairGrantsPrefix, name), Prefixed(FairLagPrefix, name)}
}

func fairChannelKeys(name string) []string {
	return []string{name, Prefixed(RedissonQueuePrefix, name), Prefixed(RedissonTimeoutPrefix, name), UnlockChannel(name),
		Prefixed(FairAlivePrefix, name), Prefixed(FairGrantsPrefix, name), Prefixed(FairLagPrefix, name)}
}

// SemChannel is the channel of Redisson's semaphores that tells their waiters of permits given
// back: "redisson_sc:{<name>}".
func SemChannel(name string) string { return Prefixed(SemaphoreChannelPrefix, name) }

// PermitKeys are the keys of the expirable semaphore's scripts: the count, the sorted set of
// permit id -> expiry, the channel.
func PermitKeys(name string) []string {
	return []string{name, Suffixed(name, PermitTimeoutSuffix), SemChannel(name)}
}

// RWChannel is the channel both sides of Redisson's read-write lock announce on.
func RWChannel(name string) string { return Prefixed(RWLockChannelPrefix, name) }

// RWTimeouts starts every read hold's timeout key of lock name: "{<name>}".
func RWTimeouts(name string) string { return strings.TrimSuffix(Suffixed(name, ""), ":") }

// RWOwnerTimeouts starts the timeout keys of the read holds of the owner with field:
// "{<name>}:<field>:rwlock_timeout".
func RWOwnerTimeouts(name, field string) string {
	return Suffixed(name, field+":"+RWLockTimeoutSuffix)
}

// Flag is a script's boolean argument, "1" or "0".
func Flag(b bool) any {
	if b {
		return "1"
	}
	return "0"
}

// The line's arguments are appended to a command the caller has started (its EVALSHA head), as
// the caller boxes them: a sale runs both scripts, and boxing what repeats (the fenced flag, the
// process's prefix, the lease) once is allocations saved on every call.

// LineAcquireArgs appends LineAcquire's arguments: value's attempt at now, the fenced flag
// ("1"/"0", Flag) and the lease; queued in the line until queueUntil (0: not queued), with a
// lock handed to it living grant.
func LineAcquireArgs(dst []any, value string, now int64, fenced, lease any, queueUntil, grant int64) []any {
	return append(dst, value, now, fenced, lease, queueUntil, grant)
}

// LineNext is the next waiter a LineRelease names (Value "": none): when it gives up, the TTL of
// a lock handed to it, its lease, and whether it may have the lock before the Redis line.
type LineNext struct {
	Value        string
	Deadline     int64
	Grant, Lease any
	Before       bool
}

// LineReleaseArgs appends LineRelease's arguments: value's release at now, by the process whose
// values start with mine, naming its next waiter.
func LineReleaseArgs(dst []any, value string, now int64, fenced, mine any, next LineNext) []any {
	dst = append(dst, value, now, fenced, mine, GrantChannelPrefix)
	if next.Value == "" {
		return append(dst, "", 0, 0, 0, "0")
	}
	return append(dst, next.Value, next.Deadline, next.Grant, next.Lease, Flag(next.Before))
}

// FencedRenew: a string lock's expiry pushed out to lease while it holds value.
func FencedRenewCall(key, value string, lease int64) Call {
	return Call{"FencedRenew", []string{key}, []any{value, lease}}
}

// Redisson's RLock layout (NewReentrant, NewFair's renewal, the write side, each multilock part).

// ReentrantAcquireCall takes or re-enters the hash lock key for field.
func ReentrantAcquireCall(key, field string, lease int64) Call {
	return Call{"ReentrantAcquire", []string{key}, []any{lease, field}}
}

// ReentrantRenewCall pushes the hash lock's expiry out while field holds it.
func ReentrantRenewCall(key, field string, lease int64) Call {
	return Call{"ReentrantRenew", []string{key}, []any{lease, field}}
}

// ReentrantReleaseCall gives back one of field's holds, announcing the last on the unlock channel.
func ReentrantReleaseCall(key, field string, lease int64) Call {
	return Call{"ReentrantRelease", []string{key, UnlockChannel(key)}, []any{UnlockMessage, lease, field}}
}

// RLockAcquireCall is ReentrantAcquire queueing process id in the line until queueUntil when it fails.
func RLockAcquireCall(key, field string, lease, now int64, id string, queueUntil int64) Call {
	return Call{"RLockAcquire", LineOf(key), []any{lease, field, now, id, queueUntil}}
}

// RLockReleaseCall is ReentrantRelease by process id, which stays in the line until stay (0: it
// leaves) and nominates the next process.
func RLockReleaseCall(key, field string, lease, now int64, id string, stay int64, sharded bool) Call {
	return Call{"RLockRelease", NominationKeys(key), []any{now, id, stay, UnlockMessage, Flag(sharded), lease, field}}
}

// RLockPassCall takes process id out of the line, nominating the next when the lock is free.
func RLockPassCall(key string, now int64, id string, sharded bool) Call {
	return Call{"RLockPass", NominationKeys(key), []any{now, id, UnlockMessage, Flag(sharded)}}
}

// RFencedAcquireCall is ReentrantAcquire in Redisson's RFencedLock layout: the lock, its token
// counter "redisson_lock_token:{<key>}" (no TTL: tokens rise past every expiry) and token, the
// default layout's counter, kept in step with it.
func RFencedAcquireCall(key, field string, lease int64, token string) Call {
	return Call{"RFencedAcquire", []string{key, Prefixed(RedissonTokenPrefix, key), token}, []any{lease, field}}
}

// Fair is NewFair's side of Redisson's RFairLock. id names the process; lagCap is how far the
// move-ups may be owed (fair_lag.lua).
type Fair struct {
	ID     string
	LagCap int64
}

// Acquire is field's attempt at now: it joins the queue when it fails. grant is the TTL of a lock
// handed to it (0: none), pickup whether it takes one (not on a re-entry), keep how long the
// queue must outlive the join, aliveUntil the process's heartbeat.
func (f Fair) Acquire(key, field string, lease, wait, now, grant int64, pickup bool, keep, aliveUntil int64) Call {
	return Call{"FairAcquire", FairKeys(key), []any{lease, field, wait, now, grant, Flag(pickup), keep, f.ID, aliveUntil, f.LagCap}}
}

// Beat is the process's heartbeat at now, alive until aliveUntil. It wakes the first waiter,
// when the lock is free and that waiter is of another process, with the unlock message.
func (f Fair) Beat(key string, now, aliveUntil int64) Call {
	return Call{"FairBeat", fairChannelKeys(key), []any{UnlockMessage, "", "", now, f.ID, aliveUntil, f.LagCap}}
}

// Release gives back one of field's holds (of lease hold) at now; a lock it hands to a waiter
// lives lease once taken. It hands the lock over itself to a next waiter of its own process (none
// with no ID).
func (f Fair) Release(key, field string, hold, now, lease, wait int64) Call {
	mine := ""
	if f.ID != "" {
		mine = f.ID + ":"
	}
	return Call{"FairRelease", fairChannelKeys(key), []any{UnlockMessage, hold, field, now, mine, lease, wait, FairGrantMessage, f.LagCap}}
}

// Cancel takes field out of the queue.
func (f Fair) Cancel(key, field string, wait int64) Call {
	return Call{"FairCancel", fairChannelKeys(key), []any{field, wait, UnlockMessage, f.LagCap}}
}

// Redisson's RReadWriteLock: an owner's read field is "<instance-id>:<owner>", its write field
// WriteField of it.

// WriteField is the write side's field of the owner whose read field is field.
func WriteField(field string) string { return field + ":write" }

// ReadLockAcquireCall takes a read hold for the owner with field.
func ReadLockAcquireCall(key, field string, lease int64) Call {
	return Call{"ReadLockAcquire", []string{key, RWOwnerTimeouts(key, field)}, []any{lease, field, WriteField(field)}}
}

// WriteLockAcquireCall takes the write side for the owner with read field field.
func WriteLockAcquireCall(key, field string, lease int64) Call {
	return Call{"WriteLockAcquire", []string{key}, []any{lease, WriteField(field), field}}
}

// ReadLockRenewCall pushes the lock and the owner's read timeouts out.
func ReadLockRenewCall(key, field string, lease int64) Call {
	return Call{"ReadLockRenew", []string{key, RWTimeouts(key)}, []any{lease, field}}
}

// ReadLockReleaseCall gives back one read hold.
func ReadLockReleaseCall(key, field string) Call {
	return Call{"ReadLockRelease", []string{key, RWChannel(key), RWOwnerTimeouts(key, field), RWTimeouts(key)}, []any{UnlockMessage, field}}
}

// WriteLockReleaseCall gives back one write hold (field is the write field).
func WriteLockReleaseCall(key, field string, lease int64) Call {
	return Call{"WriteLockRelease", []string{key, RWChannel(key)}, []any{ReadUnlockMessage, lease, field}}
}

// Redisson's semaphores.

// SemSetCall sets the permits when none are set.
func SemSetCall(name string, n int) Call {
	return Call{"SemSet", []string{name, SemChannel(name)}, []any{n}}
}

// SemAcquireCall takes n permits when that many are there.
func SemAcquireCall(name string, n int) Call { return Call{"SemAcquire", []string{name}, []any{n}} }

// SemReleaseCall gives n permits back.
func SemReleaseCall(name string, n int) Call {
	return Call{"SemRelease", []string{name, SemChannel(name)}, []any{n}}
}

// PermitAcquireCall takes a permit id at now, held until expires.
func PermitAcquireCall(name, id string, now, expires int64) Call {
	return Call{"PermitAcquire", PermitKeys(name), []any{now, id, expires}}
}

// PermitRenewCall pushes permit id's expiry out to expires.
func PermitRenewCall(name, id string, now, expires int64) Call {
	return Call{"PermitRenew", PermitKeys(name), []any{now, id, expires}}
}

// PermitReleaseCall gives permit id back.
func PermitReleaseCall(name, id string, now int64) Call {
	return Call{"PermitRelease", PermitKeys(name), []any{now, id}}
}

// PermitAvailableCall counts the permits available at now.
func PermitAvailableCall(name string, now int64) Call {
	return Call{"PermitAvailable", PermitKeys(name), []any{now}}
}

// Redlock's fencing tokens, on each master.

// RedlockTokenKey is a Redlock key's token counter on each master: it shares the key's hash tag,
// and has no TTL, since tokens must keep increasing across holders.
func RedlockTokenKey(key string) string { return key + ":token" }

// RedlockTokenReadCall reads the counter while value holds key.
func RedlockTokenReadCall(key, value string) Call {
	return Call{"RedlockTokenRead", []string{key, RedlockTokenKey(key)}, []any{value}}
}

// RedlockTokenRaiseCall raises the counter to token while value holds key.
func RedlockTokenRaiseCall(key, value string, token int64) Call {
	return Call{"RedlockTokenRaise", []string{key, RedlockTokenKey(key)}, []any{value, token}}
}

// Replies: what the scripts with more than one thing to say answer, an array, read alike by
// package lock (go-redis gives an int64 for an integer) and the simulator (its in-process Redis,
// an int).

// Integer reads an integer reply.
func Integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// Integers reads an array of integers (nil: a reply of another shape).
func Integers(v any) []int64 {
	r, _ := v.([]any)
	out := make([]int64, len(r))
	for i, e := range r {
		n, ok := Integer(e)
		if !ok {
			return nil
		}
		out[i] = n
	}
	return out
}

// LineAcquired reads LineAcquire's reply: {1, token} held, or {0, ms} not held, worth looking
// again in ms. ok is false for any other shape.
func LineAcquired(r []any) (held bool, n int64, ok bool) {
	if len(r) != 2 {
		return false, 0, false
	}
	h, ok1 := Integer(r[0])
	n, ok2 := Integer(r[1])
	return h == 1, n, ok1 && ok2
}

// LineReleased is LineRelease's reply: Code 0, the lock was not the releaser's (it only left the
// line); 1, deleted; 2, handed to To, the first in line, with Token; 3, handed to To, the
// releasing process's next waiter (Cohort: by the cohort, before the line).
type LineReleased struct {
	Code   int64
	To     string
	Token  int64
	Cohort bool
}

// ReadLineRelease reads LineRelease's reply; ok is false for a shape it never answers.
func ReadLineRelease(r []any) (LineReleased, bool) {
	if len(r) == 0 {
		return LineReleased{}, false
	}
	code, ok := Integer(r[0])
	if !ok || code < 2 {
		return LineReleased{Code: code}, ok
	}
	if len(r) < 3 {
		return LineReleased{}, false
	}
	to, ok1 := r[1].(string)
	tok, ok2 := Integer(r[2])
	return LineReleased{Code: code, To: to, Token: tok, Cohort: code == 3 && len(r) > 3}, ok1 && ok2
}

// ReadFairBeat reads FairBeat's reply {first, pttl, holder}: the first waiter and the lock's one
// holder (” for none), and the lock's PTTL (-2: free, the first waiter may take it).
func ReadFairBeat(r []any) (first string, pttl int64, holder string, ok bool) {
	if len(r) != 3 {
		return "", 0, "", false
	}
	first, ok1 := r[0].(string)
	pttl, ok2 := Integer(r[1])
	holder, ok3 := r[2].(string)
	return first, pttl, holder, ok1 && ok2 && ok3
}

// ReadFairRelease reads FairRelease's reply {kind, first}: 0 still held (nested), 1 deleted and
// the first waiter (first, ” for none) told, 2 handed to first, a waiter of this process, 3 to
// first, of another process.
func ReadFairRelease(r []any) (kind int64, first string, ok bool) {
	if len(r) != 2 {
		return 0, "", false
	}
	kind, ok1 := Integer(r[0])
	first, ok2 := r[1].(string)
	return kind, first, ok1 && ok2
}
