package locktest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ClusterInstalled reports whether NewCluster can run: real servers in use and redis-cli on PATH.
func ClusterInstalled() bool {
	_, err := exec.LookPath("redis-cli")
	return UseReal() && err == nil
}

// NewCluster starts a Redis Cluster of n masters (no replicas) on real redis-server processes for
// tb, joined with redis-cli --cluster create, and waits until every node says cluster_state:ok.
// The nodes are stopped when the test ends. Without redis-server or redis-cli the test is
// skipped: an in-process Redis cannot be a cluster node.
func NewCluster(tb testing.TB, n int) []*Server {
	tb.Helper()
	if !ClusterInstalled() {
		tb.Skip("a Redis Cluster needs real redis-server and redis-cli (apt: redis-server redis-tools)")
	}
	nodes := make([]*Server, n)
	errs := make([]error, n)
	done := make(chan int, n)
	for i := range nodes {
		go func() {
			nodes[i], errs[i] = Start(Options{Args: []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "2000"}})
			done <- i
		}()
	}
	for range n {
		<-done
	}
	var addrs []string
	for _, s := range nodes {
		if s != nil {
			tb.Cleanup(s.Close)
			addrs = append(addrs, s.Addr)
		}
	}
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("start cluster nodes: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	for _, s := range nodes {
		c := s.Client()
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				_ = c.Close()
				tb.Fatal(fmt.Errorf("cluster node %s not ok: %w", s.Addr, errors.Join(err, ctx.Err())))
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return nodes
}
