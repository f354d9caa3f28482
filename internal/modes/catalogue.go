package modes

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"
)

// The safe modes are the library's locks, built through its public API; the broken ones live in
// this package (setnx.go, on the steps of naive/; none is noneLocker, modes.go).
func init() {
	register(Mode{
		Name: "fair", Row: 13, Step: "docs/lab.md step 13; Redisson RFairLock: https://redisson.org/docs/data-and-services/locks-and-synchronizers/", Source: "step 13: Redisson RFairLock", Safe: true,
		Summary: "Redisson RFairLock layout: the reentrant hash and watchdog plus a queue and deadlines in Redis; " +
			"waiters are served in the order they queued, across instances, each woken on its own channel",
		Faults: watchdogFaults,
		New:    build(lock.NewFair),
	})

	register(Mode{
		Name: "fenced", Row: 10, Step: "docs/lab.md step 10; Kleppmann's fencing tokens: https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html", Source: "step 10: fencing tokens",
		Safe: true,
		Summary: "SET NX PX + INCR token in one script, watchdog every lease/3, compare-and-delete release; " +
			"the stock write is accepted only with a token not older than the newest written, so a frozen " +
			"holder's stale write is rejected (no lost update)",
		Faults: watchdogFaults,
		New:    build(lock.NewFenced),
	})

	register(Mode{
		Name: "lua", Row: 6, Step: "docs/lab.md step 6; the Redis lock page: https://redis.io/docs/latest/develop/use/patterns/distributed-locks/", Source: "step 6: Lua compare-and-delete", Safe: false,
		Summary: "UUID value, SET NX PX, Lua compare-and-delete release: never deletes another's lock, " +
			"but with business time > lease two holders overlap (no watchdog)",
		Faults: lockedFaults,
		New:    unwatched(build(lock.NewLua)),
	})

	register(Mode{
		Name: "multilock", Row: 8, Step: "docs/lab.md step 8; Redisson MultiLock: https://redisson.org/docs/data-and-services/locks-and-synchronizers/", Source: "step 8: Redisson MultiLock", Safe: true,
		Summary: "Redisson MultiLock: one reentrant lock on every master, all required, taken in order and " +
			"given back on any failure; renewed on every master; with a master down it fails cleanly",
		Faults: watchdogFaults,
		New:    buildMasters(lock.NewMultilock),
	})

	register(Mode{
		Name: "redlock", Row: 9, Step: "docs/lab.md step 9; Redlock on the Redis lock page: https://redis.io/docs/latest/develop/use/patterns/distributed-locks/", Source: "step 9: Redlock", Safe: true,
		Summary: "Redlock via redsync over the independent masters: majority quorum, validity = ttl - elapsed - drift, " +
			"release everywhere after a failed attempt; waiters woken by the release (1-10 ms random retry only when none comes); " +
			"extended every ttl/3 while held, " +
			"a failed extension tells the holder the lock is lost",
		Faults: watchdogFaults,
		New:    buildMasters(lock.NewRedlock),
	})

	register(Mode{
		Name: "redlock-fenced", Row: 10, Step: "docs/lab.md step 10; Kleppmann's fencing tokens, on Redlock: https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html", Source: "step 10: tokens on Redlock",
		Safe: true,
		Summary: "redlock, plus a fencing token drawn from a counter on the masters (read on a majority, raised on a majority); " +
			"the stock write is accepted only with a token not older than the newest written, so a holder whose lock " +
			"expired early (a pause, a clock jump) cannot overwrite the next holder's sale; a master restarted empty forgets the counter",
		Faults: watchdogFaults,
		New:    buildMasters(lock.NewRedlock, lock.WithFencingTokens()),
	})

	register(Mode{
		Name: "reentrant", Row: 7, Step: "docs/lab.md step 7; Redisson RLock: https://redisson.org/docs/data-and-services/locks-and-synchronizers/", Source: "step 7: Redisson RLock", Safe: true,
		Summary: "Redisson RLock layout: hash field <instance>:<owner> = hold count, renewed every lease/3 by a " +
			"watchdog, waiters woken by the unlock PUBLISH; never overlaps, a crashed holder's lock expires one lease later",
		Faults: watchdogFaults,
		New:    build(lock.NewReentrant),
	})

	register(Mode{
		Name: "none", Row: 1, Step: "docs/lab.md step 1: no lock", Source: "step 1: no lock",
		Summary: "BROKEN: no lock; concurrent read-check-writes of the stock lose updates and oversell",
		Faults:  []string{FaultWork},
		New:     func(Deps) (Locker, error) { return noneLocker{}, nil },
	})

	register(Mode{
		Name: "atomic", Row: 11, Step: "docs/lab.md step 11: the atomic Lua decrement", Source: "step 11: atomic Lua decrement", Safe: true, Atomic: true,
		Summary: "no lock: one Lua script decrements only while stock > 0 and records the order; the throughput ceiling",
	})

}

// build adapts a single-server constructor of the library to a mode: it is given every option
// of Deps (and the mode's own, extra) and takes what it honours.
func build(newLock func(rdb redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error), extra ...lock.Option) func(Deps) (Locker, error) {
	return func(d Deps) (Locker, error) {
		l, err := newLock(d.Data, d.options(extra...)...)
		if err != nil {
			return nil, err
		}
		return libLocker{l: l}, nil
	}
}

// buildMasters adapts a constructor over the independent masters to a mode, as build does.
func buildMasters(newLock func(masters []redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error), extra ...lock.Option) func(Deps) (Locker, error) {
	return func(d Deps) (Locker, error) {
		if len(d.Masters) == 0 {
			return noMasters{}, nil
		}
		l, err := newLock(d.Masters, d.options(extra...)...)
		if err != nil {
			return nil, err
		}
		return libLocker{l: l}, nil
	}
}

// libLocker is a library Locker as a mode's Locker.
type libLocker struct {
	l *lock.Locker
	// unwatched: the mode has no watchdog (lua), so its holders are not told of a loss.
	unwatched bool
}

// unwatched marks a mode whose lock nothing renews. The lab's holders, like the tutorials', learn
// of a loss only from a watchdog: a lease that nothing renews (this mode's, or an explicit lease
// in any mode) reaches the sale with no Lost channel, though the library closes one when the lease
// runs out by its clock. Heeding it would spare them the overlap the lab exists to show (rows 6
// and 7: business time longer than the lease).
func unwatched(b func(Deps) (Locker, error)) func(Deps) (Locker, error) {
	return func(d Deps) (Locker, error) {
		l, err := b(d)
		if ll, ok := l.(libLocker); ok && err == nil {
			ll.unwatched = true
			return ll, nil
		}
		return l, err
	}
}

func (a libLocker) Acquire(ctx context.Context, key string, opts lock.Options) (Lease, error) {
	if !a.l.Reentrant() {
		opts.Owner = "" // the order names the holder only where the lock keeps owners
	}
	le, err := a.l.Acquire(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	if a.unwatched || opts.ExplicitLease {
		return blindLease{le}, nil
	}
	return le, nil
}

// blindLease is a lease whose holder is not told when it runs out (unwatched).
type blindLease struct{ *lock.Lease }

func (blindLease) Lost() <-chan struct{} { return nil }

func (a libLocker) Close() error { return a.l.Close() }

func (a libLocker) Keys(name string) []string { return a.l.Keys(name) }

func (a libLocker) Queue(ctx context.Context, name string) ([]string, []time.Time, error) {
	return a.l.Queue(ctx, name)
}

// noMasters stands for a mode over independent masters when none are configured: every
// acquisition says so.
type noMasters struct{ noConns }

func (noMasters) Acquire(_ context.Context, key string, _ lock.Options) (Lease, error) {
	return nil, fmt.Errorf("lock: %s: %w: no independent masters configured (redis.masters)", key, lock.ErrUnavailable)
}
