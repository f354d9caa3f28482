package redisproc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/internal/redisproc"
)

// TestReplicatedFailover: the Sentinel topology comes up, a write reaches the replica, and when
// the master is killed the sentinels promote the replica, which the failover client then finds.
func TestReplicatedFailover(t *testing.T) {
	t.Parallel() // each on a topology of its own, after the serial TestSentinelsMoveOffATakenPort
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	r, err := redisproc.StartReplicated(ctx, redisproc.ReplicatedOptions{})
	if errors.Is(err, redisproc.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Logf("master, replica and 3 sentinels ready in %s", time.Since(start).Round(time.Millisecond))
	c := r.FailoverClient()
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "wait", 1, 2000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas acknowledged, %v", n, err)
	}
	killed := time.Now()
	r.Master.Stop()
	if err := r.WaitMaster(ctx, r.Replica.Addr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica promoted %s after the master was killed", time.Since(killed).Round(time.Millisecond))
	var v string
	for range 50 {
		if v, err = c.Get(ctx, "k").Result(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || v != "v" {
		t.Fatalf("GET k through the failover client after the failover: %q, %v", v, err)
	}
}

// TestHoldBackReplication: with the replica paused and its link dropped, a write never reaches
// it, and WAIT says so.
func TestHoldBackReplication(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := redisproc.StartReplicated(ctx, redisproc.ReplicatedOptions{})
	if errors.Is(err, redisproc.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.HoldBackReplication(ctx); err != nil {
		t.Fatal(err)
	}
	m := r.Master.Client()
	defer m.Close()
	if err := m.Set(ctx, "held-back", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Do(ctx, "wait", 1, 300).Int(); err != nil || n != 0 {
		t.Fatalf("WAIT 1 with the replica held back: %d acknowledged (%v), want 0", n, err)
	}
	r.Master.Stop()
	if err := r.Replica.Resume(); err != nil {
		t.Fatal(err)
	}
	rep := r.Replica.Client()
	defer rep.Close()
	time.Sleep(200 * time.Millisecond)
	if n, err := rep.Exists(ctx, "held-back").Result(); err != nil || n != 0 {
		t.Fatalf("the replica has the held-back write (exists %d, %v)", n, err)
	}
}
