package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/service"
	"seckill/store"
)

// Strategy is one way of selling under contention that the bench measures.
type Strategy struct {
	Name string `json:"name"`
	// Kind is "mode" (a lock mode of this service, sold through service.Service) or
	// "reference" (a library used the way its documentation shows, for comparison).
	Kind string `json:"kind"`
	// RoundTrips is k, the round trips one sale makes one after the other while it holds the
	// lock (acquire, GET, commit, release; a call to several masters at once counts once):
	// no lock can sell faster than 1 / (k × RTT) on one key.
	RoundTrips int    `json:"roundTrips"`
	About      string `json:"about"`
	// Locked: the sale holds a lock (every strategy but atomic).
	Locked bool `json:"locked"`

	// build makes the sale of one instance (its own clients, registry and lock clients).
	build func(e *env, in *instance) saleFunc
}

// Reference strategy names.
const (
	RefRedsync      = "redsync-default"
	RefSpin         = "spin-100ms"
	RefRedislock100 = "redislock-100ms"
	RefRedislock10  = "redislock-10ms"
	RefRedislock1   = "redislock-1ms"
)

// refRedislock lists the redislock settings, in table order.
var refRedislock = []string{RefRedislock100, RefRedislock10, RefRedislock1}

// peerRefs are the references a lock mode is measured against across instances: every
// redislock setting and redsync with its defaults.
var peerRefs = append([]string{RefRedsync}, refRedislock...)

// strategies lists everything the bench can run, in table order.
func strategies() []Strategy {
	// A lock mode of the service, as the registry describes it (modes.Modes): whether it takes a
	// lock at all is the mode's own metadata.
	mode := func(name string, k int, about string) Strategy {
		m, _ := modes.LookupMode(name) // an unknown name fails its first sale, naming the mode
		return Strategy{Name: name, Kind: "mode", RoundTrips: k, About: about, Locked: !m.Atomic,
			build: func(e *env, in *instance) saleFunc {
				return func(ctx context.Context, _ int) error {
					_, err := in.svc.Sale(ctx, service.SaleRequest{SKU: e.sku, Mode: name})
					return err
				}
			}}
	}
	return []Strategy{
		mode("lua", 3, "SET NX PX / GET / commit + compare-and-hand-over to the first waiter in line (+ PUBLISH to its instance), one pipeline"),
		mode("reentrant", 3, "Redisson RLock script / GET / commit + release script (+ PUBLISH), one pipeline"),
		mode("multilock", 6, "RLock on 3 masters in turn / GET / commit / release on 3 at once"),
		mode("redlock", 4, "redsync SET NX on 3 at once / GET / commit / delete on 3 at once"),
		mode("fenced", 3, "SET NX PX + INCR token / GET / fenced commit + compare-and-hand-over (+ PUBLISH to its instance), one pipeline"),
		mode("fair", 3, "Redisson RFairLock script / GET / commit + release script (+ PUBLISH to the first in the queue), one pipeline"),
		mode("atomic", 1, "one Lua decrement, no lock"),
		{Name: RefRedsync, Kind: "reference", RoundTrips: 4, Locked: true,
			About: "redsync v4 Mutex.Lock with default options (8 s expiry, 32 tries, 50-250 ms random retry) on the 3 masters",
			build: buildRedsyncDefault},
		{Name: RefSpin, Kind: "reference", RoundTrips: 4, Locked: true,
			About: "a classic spin tryLock: SET NX EX, sleep 100 ms, retry until the wait; Lua compare-and-delete",
			build: buildSpin},
		{Name: RefRedislock100, Kind: "reference", RoundTrips: 4, Locked: true,
			About: "bsm/redislock Obtain (SET NX PX script) with RetryStrategy LinearBackoff(100 ms), its documented example, " +
				"until the wait; TTL = the lease; Release (compare-and-delete script)",
			build: buildRedislock(RefRedislock100, 100*time.Millisecond)},
		{Name: RefRedislock10, Kind: "reference", RoundTrips: 4, Locked: true,
			About: "bsm/redislock as redislock-100ms, with LinearBackoff(10 ms)",
			build: buildRedislock(RefRedislock10, 10*time.Millisecond)},
		{Name: RefRedislock1, Kind: "reference", RoundTrips: 4, Locked: true,
			About: "bsm/redislock as redislock-100ms, with LinearBackoff(1 ms)",
			build: buildRedislock(RefRedislock1, time.Millisecond)},
	}
}

// errRefTimeout: a reference strategy gave up waiting for its lock.
var errRefTimeout = errors.New("reference lock not obtained")

// critical is the read-check-write that every locked strategy protects, the same as the
// service's: GET the stock, then write stock-1 and record the order in one script.
func (e *env) critical(ctx context.Context, in *instance, mode string) error {
	stock, err := in.store.Stock(ctx, e.sku)
	if err != nil {
		return err
	}
	if stock <= 0 {
		return service.ErrSoldOut
	}
	_, err = in.store.Commit(ctx, e.sku, stock-1, store.Order{ID: uuid.NewString(), Instance: "bench", Mode: mode})
	return err
}

// buildRedsyncDefault is redsync used as its README shows: NewMutex(name) with no options, Lock,
// critical section, Unlock.
func buildRedsyncDefault(e *env, in *instance) saleFunc {
	pools := make([]redsyncredis.Pool, len(in.masters))
	for i, m := range in.masters {
		pools[i] = goredis.NewPool(m)
	}
	rs := redsync.New(pools...)
	key := store.LockKey(e.sku, RefRedsync)
	return func(ctx context.Context, _ int) error {
		m := rs.NewMutex(key)
		if err := m.LockContext(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: redsync: %w", errRefTimeout, err)
		}
		err := e.critical(ctx, in, RefRedsync)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := m.UnlockContext(uctx); uerr != nil && err == nil {
			err = fmt.Errorf("redsync unlock: %w", uerr)
		}
		return err
	}
}

//go:embed spin_unlock.lua
var spinUnlockLua string

var spinUnlock = redis.NewScript(spinUnlockLua)

// spinSleep and spinLease are a classic spin tryLock's: a fixed 100 ms sleep
// between tries, and an EX lease in seconds.
const (
	spinSleep = 100 * time.Millisecond
	spinLease = 30 * time.Second
)

// buildSpin is a classic spin tryLock, the kind many hand-written Redis lock services use:
// value = UUID + timestamp, SET NX EX in a loop with a fixed 100 ms sleep until the wait
// runs out, unlock by a Lua compare-and-delete.
func buildSpin(e *env, in *instance) saleFunc {
	key := store.LockKey(e.sku, RefSpin)
	return func(ctx context.Context, _ int) error {
		value := uuid.NewString() + strconv.FormatInt(time.Now().UnixMilli(), 10)
		first := time.Now()
		for {
			ok, err := in.data.SetNX(ctx, key, value, spinLease).Result()
			if err != nil {
				return err
			}
			if ok {
				break
			}
			if time.Since(first) > e.wait {
				return fmt.Errorf("%w: spin: %s", errRefTimeout, key)
			}
			t := time.NewTimer(spinSleep)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		err := e.critical(ctx, in, RefSpin)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if uerr := spinUnlock.Run(uctx, in.data, []string{key}, value).Err(); uerr != nil && err == nil {
			err = fmt.Errorf("spin unlock: %w", uerr)
		}
		return err
	}
}

// buildRedislock is github.com/bsm/redislock used as its README shows: redislock.New(client),
// Obtain(ctx, key, ttl, &Options{RetryStrategy: LinearBackoff(d)}), critical section, Release.
// Obtain retries every d until its context ends; the context is bounded by the bench's wait
// (without a deadline, redislock would stop at the TTL). The TTL is the bench's lease, far
// longer than the critical section, so the lock never expires under a holder.
func buildRedislock(name string, d time.Duration) func(e *env, in *instance) saleFunc {
	return func(e *env, in *instance) saleFunc {
		locker := redislock.New(in.data)
		key := store.LockKey(e.sku, name)
		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(d)}
		return func(ctx context.Context, _ int) error {
			octx, cancel := context.WithTimeout(ctx, e.wait)
			l, err := locker.Obtain(octx, key, e.lease, opt)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("%w: redislock: %w", errRefTimeout, err)
			}
			err = e.critical(ctx, in, name)
			uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer ucancel()
			if uerr := l.Release(uctx); uerr != nil && err == nil {
				err = fmt.Errorf("redislock release: %w", uerr)
			}
			return err
		}
	}
}
