package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
)

// defaultWaitReplicasTimeout is Redisson's default slavesSyncTimeout.
const defaultWaitReplicasTimeout = time.Second

// replicaSync is the reentrant lock's option to wait for replicas (lock.waitReplicas), as current
// Redisson does with checkLockSyncedSlaves: right after the acquire script took the lock, WAIT
// for n replicas on the same connection. Asynchronous replication is what lets a failover hand
// the lock to a second holder (the master dies before its replica has the lock, and the
// replica is promoted without it). With the acknowledgement the lock is on a replica
// before anyone relies on it; without it, the acquisition is given back and fails.
//
// WAIT is not consensus (the Redis documentation says so): it makes the write durable on n
// replicas, but Sentinel may still promote a replica that had not acknowledged it (one that
// lagged, with n smaller than the number of replicas). Redlock answers the same question by a
// majority of independent masters instead.
type replicaSync struct {
	n       int
	timeout time.Duration
}

func newReplicaSync(d settings) *replicaSync {
	if d.WaitReplicas <= 0 {
		return nil
	}
	return &replicaSync{n: d.WaitReplicas, timeout: d.WaitReplicasTimeout} // defaulted in apply
}

// confirm makes sure a lock just taken, by a kind that does not wait for replicas inside its
// acquire, is on n replicas: the lock's renewal is sent on one connection to the key's master,
// then WAIT on that connection. The renewal is written after every write that gave this
// acquisition the lock (its own attempt, or another process's release that handed it over), and
// replication keeps the master's order, so a replica that acknowledged the renewal has the lock.
// Too few acknowledgements give the lock back and fail with ErrNotReplicated.
func (s *replicaSync) confirm(ctx context.Context, rdb redis.UniversalClient, key string, h heldLock) error {
	on, ok := h.(interface {
		refreshOn(context.Context, redis.Scripter) error
	})
	if !ok {
		return fmt.Errorf("lock: %s: this kind cannot wait for replicas", key)
	}
	err := func() error {
		conn, err := stickyConn(ctx, rdb, key)
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := on.refreshOn(ctx, conn); err != nil {
			return err
		}
		acked, err := conn.Wait(ctx, s.n, s.timeout).Result()
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w: WAIT %d after acquiring %s: %w", ErrUnavailable, ErrNotReplicated, s.n, key, err)
		case acked < int64(s.n):
			return fmt.Errorf("%w: %w: %s: %d of %d replicas acknowledged the lock within %s; acquisition undone",
				ErrUnavailable, ErrNotReplicated, key, acked, s.n, s.timeout)
		}
		return nil
	}()
	if err != nil {
		// Give the lock back even if the caller has gone: a lock nobody relies on must not stay.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		_ = h.releaseAfter(uctx, nil)
	}
	return err
}

// stickyConn is one connection to the server that owns key: WAIT counts the acknowledgements of
// the writes made on its own connection, so the acquire script and the WAIT must share one.
func stickyConn(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Conn, error) {
	switch c := rdb.(type) {
	case *redis.Client: // one server, or the master found through Sentinel
		return c.Conn(), nil
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, redisErr("find the master of "+key, err)
		}
		return m.Conn(), nil
	default:
		return nil, fmt.Errorf("lock: waiting for replicas needs a single-server, Sentinel or Cluster client, not %T", rdb)
	}
}

// trySynced is try with the wait for replicas: the acquire script, then (when it took the lock)
// WAIT on the same connection. Too few acknowledgements give the hold just taken back (the
// release script: a first hold deletes the key and wakes the waiters) and fail with
// ErrNotReplicated.
func (l *reentrantLocker) trySynced(ctx context.Context, ask core.Ask) (bool, time.Duration, error) {
	key := ask.Key
	conn, err := stickyConn(ctx, l.rdb, key)
	if err != nil {
		return false, 0, err
	}
	defer conn.Close()
	ask.Now = time.Now()
	if t, err := attempt(ctx, conn, l.sub.mode, core.RLock, ask); err != nil || !t.Held {
		return false, t.Wait, err
	}
	acked, werr := conn.Wait(ctx, l.sync.n, l.sync.timeout).Result()
	if werr == nil && acked >= int64(l.sync.n) {
		return true, 0, nil
	}
	// Give the hold back even if the request is gone: a lock nobody relies on must not stay.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	ask.Line, ask.Until = "", time.Time{}
	_, uerr := reply(run(uctx, conn, core.RLock.Release(ask)))
	if uerr != nil {
		l.log.Warn("could not give back a lock no replica acknowledged; it expires with its lease",
			"lock", l.name, "key", key, "err", uerr)
	}
	if werr != nil {
		return false, 0, fmt.Errorf("%w: %w: WAIT %d after acquiring %s: %w", ErrUnavailable, ErrNotReplicated,
			l.sync.n, key, werr)
	}
	return false, 0, fmt.Errorf("%w: %w: %s: %d of %d replicas acknowledged the lock within %s; acquisition undone",
		ErrUnavailable, ErrNotReplicated, key, acked, l.sync.n, l.sync.timeout)
}
