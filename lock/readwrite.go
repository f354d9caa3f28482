package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
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
// asking for the write side is ErrUpgrade. Both sides are renewed by a watchdog every lease/3,
// and their waiters are woken by the releases on redisson_rwlock:{key}. Close each side.
func NewReadWrite(rdb redis.UniversalClient, opts ...Option) (read, write *Locker, err error) {
	var rw *rwLock
	spec := func(write bool) kindSpec {
		return kindSpec{name: "readWrite", owners: yes, options: fixed("WithReplicas", "WithShardedPubSub"),
			newMode: func(d settings) (locker, error) {
				if rw == nil {
					rw = newRWLock(d)
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
// write field name one owner only under the same id), and the holds taken here by each owner,
// so that an owner's re-entry or downgrade tries at once instead of queueing behind waiters.
type rwLock struct {
	rdb redis.UniversalClient
	id  string
	log *slog.Logger

	mu    sync.Mutex
	holds holdCount // key NUL owner -> leases held here, either side
}

func newRWLock(d settings) *rwLock {
	id := d.InstanceID
	if id == "" {
		id = uuid.NewString()
	}
	return &rwLock{rdb: d.Data, id: id, log: d.Logger, holds: holdCount{}}
}

// rwSide is one side of the lock. Its waiters wait in the handoff's queue of their side, rung by
// both messages Redisson publishes on redisson_rwlock:{key}: "0" when a read release deletes the
// lock, "1" when a write release frees it. A ring wakes one waiter; a reader that wins rings
// its own queue again, so the readers waiting here go one after the other, as Redisson's
// READ_UNLOCK_MESSAGE lets them all go at once.
type rwSide struct {
	*rwLock
	write bool
	hold  core.Hold // core.ReadSide or core.WriteSide
	sub   *subscriber
	queue *handoff
}

func (rw *rwLock) side(d settings, write bool) *rwSide {
	s := &rwSide{rwLock: rw, write: write, hold: core.ReadSide}
	if write {
		s.hold = core.WriteSide
	}
	s.sub, s.queue = newChannelQueue(rw.rdb, rw.log, newPubsubMode(rw.rdb, d.Subscription), s.hold)
	return s
}

// Acquire takes one hold of key's side for opts.Owner (a fresh owner when there is none).
func (s *rwSide) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	owner := ownerOf(opts)
	le := &rwLease{s: s, owner: owner, ask: core.Ask{Key: key, Field: s.id + ":" + owner, Lease: opts.Lease}}
	le.field = le.ask.Field
	if s.write {
		le.field = script.WriteField(le.field)
	}
	field := le.field
	// An owner that holds either side here tries at once: a downgrade must not queue behind the
	// readers waiting for the writer it is, and an upgrade is refused at once. Its unanswered
	// attempt is not given back (orphan.go): that could end the owner's other hold.
	s.mu.Lock()
	reentry := s.holds.has(key + "\x00" + owner)
	s.mu.Unlock()
	err := s.queue.obtain(ctx, key, "", opts.Wait, opts.Lease, reentry, func(ctx context.Context) (bool, time.Duration, error) {
		held, ttl, err := le.try(ctx)
		if !reentry {
			orphaned(ctx, err, fmt.Sprintf("%p\x00%s\x00%s", s, key, field), func(ctx context.Context) error {
				return le.release(ctx, nil)
			})
		}
		return held, ttl, err
	})
	if err != nil {
		return nil, err
	}
	if !s.write {
		s.queue.ring(key) // readers share: the next reader waiting here may go now
	}
	s.mu.Lock()
	s.holds.add(key+"\x00"+owner, 1)
	s.mu.Unlock()
	if opts.ExplicitLease {
		le.life.startUnwatched(ctx, opts.Lease, opts.Lease, time.Time{}, nil) // nothing to push
		return le, nil
	}
	le.wd = &le.life
	le.life.start(ctx, opts.Lease, opts.Lease, attemptSent(ctx, time.Now()).Add(opts.Lease), le, true, true, true)
	return le, nil
}

// Close ends the side's subscription and its waits. Held leases keep their watchdogs until they
// are released.
func (s *rwSide) Close() error {
	s.queue.close()
	return s.sub.Close()
}

// rwLease is one hold of one side.
type rwLease struct {
	s     *rwSide
	ask   core.Ask // key, the owner's read field and lease
	owner string
	field string // its side's field
	wd    *life  // &life, or nil with an explicit lease
	life  life   // the lease's life, watched or not: Lost
	gate  releaseGate
}

// keep is a round of the lease's watchdog (keeper).
func (le *rwLease) keep(ctx context.Context) (renewOutcome, error) {
	return outcome(le.refreshOn(ctx, le.s.rdb))
}

// lost logs why the watchdog lost the lease (keeper).
func (le *rwLease) lost(why error) {
	le.s.log.Warn("watchdog: lock lost", "lock", "readWrite", "key", le.ask.Key, "field", le.field, "err", why)
}

func (le *rwLease) Key() string           { return le.ask.Key }
func (le *rwLease) Field() string         { return le.field }
func (le *rwLease) Token() int64          { return 0 }
func (le *rwLease) Renewals() int64       { return le.wd.Renewals() }
func (le *rwLease) Lost() <-chan struct{} { return le.life.Lost() }

// try runs the side's acquire script once: held, or the holder's remaining PTTL (-1ms: no TTL).
func (le *rwLease) try(ctx context.Context) (bool, time.Duration, error) {
	markAttempt(ctx)
	t, err := attempt(ctx, le.s.rdb, le.s.sub.mode, le.s.hold, le.ask)
	if t.Refused {
		return false, 0, fmt.Errorf("%w: %w: %s: owner %s holds its read side; release it first", ErrNotObtained, ErrUpgrade, le.ask.Key, le.owner)
	}
	return t.Held, t.Wait, err
}

// releaseAfter gives back one hold, after the holder's pipeline p when there is one (runScript).
func (le *rwLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	return le.gate.release(ctx, p, le.ask.Key, func() {
		le.s.mu.Lock()
		le.s.holds.add(le.ask.Key+"\x00"+le.owner, -1)
		le.s.mu.Unlock()
		le.life.Stop()
	}, func() error { return le.release(ctx, p) })
}

// release sends the side's release script: ErrNotHeld when the owner holds no such hold.
func (le *rwLease) release(ctx context.Context, p redis.Pipeliner) error {
	return releaseHold(ctx, p, le.s.rdb, le.s.sub.mode, le.s.hold, le.ask, le.gone)
}

// gone is ErrNotHeld for a hold whose field is gone.
func (le *rwLease) gone() error { return noField(le.ask.Key, le.field) }

// refresh pushes the hold out by the lease while the owner's field is still there.
func (le *rwLease) refresh(ctx context.Context) error {
	return le.life.refreshBy(ctx, le.wd != nil, func(ctx context.Context) error { return le.refreshOn(ctx, le.s.rdb) })
}

// refreshOn is refresh sent through sc (one connection, for WithReplicas). A read renewal also
// pushes out the owner's timeout keys (Redisson's ReadLockTask); a write renewal is RLock's.
func (le *rwLease) refreshOn(ctx context.Context, sc redis.Scripter) error {
	return renewHold(ctx, sc, classicMode, le.s.hold, le.ask, le.gone)
}
