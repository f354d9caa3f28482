package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/redisproc"
	"seckill/store"
)

// ownMasters starts n Redis servers for the lab alone (real redis-server processes when
// installed, else in-process ones) so that a phase can stop one of them. The lab never stops a
// server it did not start: the configured masters are only ever read and written.
func (e *Env) ownMasters(n int) ([]*redisproc.Server, []redis.UniversalClient, error) {
	return e.ownMastersWith(n, nil)
}

// ownMastersWith is ownMasters with extra redis-server arguments (a real server only).
func (e *Env) ownMastersWith(n int, args []string) ([]*redisproc.Server, []redis.UniversalClient, error) {
	var (
		srvs    []*redisproc.Server
		clients []redis.UniversalClient
	)
	for range n {
		s, err := redisproc.Start(redisproc.Options{Args: args})
		if err != nil {
			for _, s := range srvs {
				s.Close()
			}
			return nil, nil, fmt.Errorf("lab: start a master for the outage phase: %w", err)
		}
		srvs = append(srvs, s)
		// No retries and a short dial timeout: a stopped master must fail fast, as a dead node does.
		// One dial attempt and a small pool also bound how often go-redis logs a refused dial.
		clients = append(clients, redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 8, MaxRetries: -1,
			DialerRetries: 1, DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second}))
	}
	// Closers run last first: the fleets built on these clients close before them.
	e.closers = append(e.closers, func() {
		for i, c := range clients {
			_ = c.Close() // a client of a stopped server may report its broken connections
			srvs[i].Close()
		}
	})
	return srvs, clients, nil
}

// lockKeysOn counts the lock keys of sku on the given servers.
func (e *Env) lockKeysOn(ctx context.Context, sku string, servers ...redis.UniversalClient) (int, error) {
	n := 0
	for _, c := range servers {
		keys, err := scanKeys(ctx, c, store.KeysFor(sku).LockPrefix)
		if err != nil {
			return 0, err
		}
		n += len(keys)
	}
	return n, nil
}

// stuckKeysOn counts the lock keys of sku on the given servers that will not expire within one
// lease (no TTL, or a longer one), and all the lock keys there are.
func (e *Env) stuckKeysOn(ctx context.Context, sku string, servers ...redis.UniversalClient) (stuck, all int, err error) {
	for _, c := range servers {
		keys, err := scanKeys(ctx, c, store.KeysFor(sku).LockPrefix)
		if err != nil {
			return 0, 0, err
		}
		for _, k := range keys {
			pttl, err := c.Do(ctx, "pttl", k).Int64()
			if err != nil {
				return 0, 0, fmt.Errorf("lab: PTTL %s: %w", k, err)
			}
			if pttl == -2 {
				continue // expired between the scan and the PTTL
			}
			all++
			if pttl == -1 || pttl > e.Lease.Milliseconds() {
				stuck++
			}
		}
	}
	return stuck, all, nil
}
