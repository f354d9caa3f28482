package redisproc

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotInstalled: a topology needs a binary that is not on PATH (or real servers are turned
// off with SECKILL_TEST_REDIS=embedded). Callers skip, they do not fail.
var ErrNotInstalled = errors.New("redisproc: needed redis binaries are not installed")

// Cluster is a Redis Cluster of masters only, every node a real redis-server on a free loopback
// port, joined with redis-cli --cluster create.
type Cluster struct {
	Nodes []*Server
}

// ClusterInstalled reports whether StartCluster can run: real servers in use and redis-cli on PATH.
func ClusterInstalled() bool {
	_, err := exec.LookPath("redis-cli")
	return UseReal() && err == nil
}

// StartCluster starts n (at least 3) cluster-enabled redis-server processes, creates the cluster
// over them (the 16384 slots split evenly, no replicas) and waits until every node answers
// cluster_state:ok. Without redis-server or redis-cli it returns ErrNotInstalled.
func StartCluster(ctx context.Context, n int) (*Cluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("redisproc: a Redis Cluster needs at least 3 masters, not %d", n)
	}
	if !ClusterInstalled() {
		return nil, fmt.Errorf("%w: redis-server and redis-cli (apt: redis-server, redis-tools)", ErrNotInstalled)
	}
	c := &Cluster{}
	for range n {
		// Each server has its own directory, so the default nodes.conf does not collide. A short
		// node timeout only matters for failures, which tests do not provoke here.
		s, err := Start(Options{Args: []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
			"--cluster-require-full-coverage", "yes"}})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "redis-cli", args...).CombinedOutput()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("redisproc: redis-cli --cluster create: %w: %s", err, tail(string(out), 600))
	}
	if err := c.waitOK(cctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// waitOK waits until every node reports cluster_state:ok and knows every other node.
func (c *Cluster) waitOK(ctx context.Context) error {
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
		var last string
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(c.Nodes))) {
				break
			}
			last = fmt.Sprint(info, err)
			select {
			case <-ctx.Done():
				_ = cl.Close()
				return fmt.Errorf("redisproc: cluster node %s not ok: %w (last: %s)", s.Addr, ctx.Err(), tail(last, 300))
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = cl.Close()
	}
	return nil
}

// Addrs lists the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

// Client opens a cluster client on the nodes.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 32,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second})
}

// Close stops every node (by the pid it started) and removes their directories.
func (c *Cluster) Close() {
	for _, s := range c.Nodes {
		s.Close()
	}
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
