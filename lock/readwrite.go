package lock

import (
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// ErrUpgrade: an owner that holds the read side of a NewReadWrite lock asked for its write side.
// The acquisition is refused at once (it is also ErrNotObtained) and nothing in Redis changes:
// the writer would wait for its own read to end, forever.
var ErrUpgrade = errors.New("lock: an owner that holds the read lock cannot take the write lock")

// NewReadWrite returns Redisson's RReadWriteLock on one Redis, wire-compatible with Redisson's
// RedissonReadLock and RedissonWriteLock: read and write are its two sides, each an ordinary
// Locker. Any number of owners hold the read side of a key at once, or one owner its write side.
// The lock is one hash: "mode" (read or write), a field "<instance-id>:<owner>" per reader and
// "<instance-id>:<owner>:write" for the writer, each with its hold count. Every read hold also
// has a timeout key, "{<key>}:<instance-id>:<owner>:rwlock_timeout:<n>". Holds re-enter by
// Options.Owner; the write side's owner may take the read side too (a downgrade), but a reader
// asking for the write side is ErrUpgrade. Both sides are renewed by a watchdog every lease/3 (an
// owner's nested holds of one side share one, as in Redisson), and their waiters are woken by the
// releases on redisson_rwlock:{key}. Each side is the reentrant lock's driver (reentrant.go) on a
// description of its own (core.ReadSide, core.WriteSide). Close each side.
func NewReadWrite(rdb redis.UniversalClient, opts ...Option) (read, write *Locker, err error) {
	var rw *rwLock
	spec := func(write bool) kindSpec {
		return kindSpec{name: "readWrite", owners: yes, options: fixed("WithReplicas", "WithShardedPubSub"),
			newMode: func(d settings) (locker, error) {
				if rw == nil {
					rw = &rwLock{id: instanceID(d), holds: holdCount{}}
				}
				return rw.side(d, write), nil
			}}
	}
	if read, err = construct(spec(false), settings{Data: rdb}, opts); err != nil {
		return nil, nil, err
	}
	if write, err = construct(spec(true), settings{Data: rdb}, opts); err != nil {
		return nil, nil, errors.Join(err, read.Close())
	}
	return read, write, nil
}

// rwLock is what the two sides of one NewReadWrite share: the instance id (a read field and a
// write field name one owner only under the same id), and the holds taken here by each owner
// with their mutex, so that an owner's re-entry or downgrade tries at once instead of queueing
// behind waiters.
type rwLock struct {
	id    string
	mu    sync.Mutex
	holds holdCount // key NUL read field -> leases held here, either side
}

// side is one side of the lock: the reentrant lock's driver (reentrant.go) taking core.ReadSide
// or core.WriteSide. Its waiters wait in its own queue, rung by both messages Redisson publishes
// on redisson_rwlock:{key}: "0" when a read release deletes the lock, "1" when a write release
// frees it. A ring wakes one waiter; a reader that wins leaves the next waiting here free to try
// at once (the side Shares: a hint of 0), so the readers waiting here go one after the other, as
// Redisson's READ_UNLOCK_MESSAGE lets them all go at once.
func (rw *rwLock) side(d settings, write bool) *reentrantLocker {
	hold := core.ReadSide
	if write {
		hold = core.WriteSide
	}
	sub, queue := newChannelQueue(d.Data, d.Logger, newPubsubMode(d.Data, d.Subscription), hold)
	return newHashLocker("readWrite", d.Data, d, hold, rw.id, &rw.mu, rw.holds, sub, queue)
}
