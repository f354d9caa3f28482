package script

import "strings"

// The names the scripts' callers give their keys, channels and messages: this library's own
// (golock_…) and the Redisson ones Java clients read and write. Package lock builds every name
// from these; a tool that drives the scripts (the simulator) takes them from here too, so no
// name is spelled twice. A key or channel of lock name is Prefixed(prefix, name).
const (
	// The line of NewLua, NewFenced and NewReentrant: the list of who waits, and their deadlines.
	LinePrefix        = "golock_line"
	LineWaitersPrefix = "golock_waiters"
	// GrantChannelPrefix starts a process's grant channel: GrantChannelPrefix + its id.
	GrantChannelPrefix = "golock_grant:"

	// NewFair beside Redisson's queue: the grants, the deferred move-ups, the heartbeats.
	FairGrantsPrefix = "golock_fair_grant"
	FairLagPrefix    = "golock_fair_lag"
	FairAlivePrefix  = "golock_fair_alive"
	// FairGrantMessage tells a fair waiter on its own channel that the lock was taken for it.
	FairGrantMessage = "golock:granted"

	// NominationChannelPrefix starts the channels on which NewReentrant's release tells the
	// first process in its line to try.
	NominationChannelPrefix = "golock_rlock_next"

	// Redisson's: RFairLock's queue and timeouts, RFencedLock's token, every lock's unlock
	// channel (with UnlockMessage, "0", published on it).
	RedissonQueuePrefix   = "redisson_lock_queue"
	RedissonTimeoutPrefix = "redisson_lock_timeout"
	RedissonTokenPrefix   = "redisson_lock_token"
	RedissonChannelPrefix = "redisson_lock__channel"
	UnlockMessage         = "0"

	// Redisson's RReadWriteLock: the channel both of its sides announce on, the suffix of each
	// read hold's timeout key, and the message a write release publishes (READ_UNLOCK_MESSAGE),
	// on which every waiting reader may go.
	RWLockChannelPrefix = "redisson_rwlock"
	RWLockTimeoutSuffix = "rwlock_timeout"
	ReadUnlockMessage   = "1"
	// Redisson's semaphores (RSemaphore, RPermitExpirableSemaphore): the channel that tells their
	// waiters of permits given back (its messages are the permits available, in decimal), and
	// the suffix of the expirable one's sorted set of permit id -> expiry.
	SemaphoreChannelPrefix = "redisson_sc"
	PermitTimeoutSuffix    = "timeout"
)

// Prefixed is prefix's name for lock name, as Redisson's RedissonObject.prefixName builds it:
// a name that already carries a hash tag keeps it, any other is wrapped in braces, so the name
// always hashes like the lock key.
func Prefixed(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// Suffixed is the name of a key kept beside lock name, as Redisson's RedissonObject.suffixName
// builds it: a name that already carries a hash tag keeps it, any other is wrapped in braces, so
// the key always hashes like name.
func Suffixed(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}
