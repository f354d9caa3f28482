package redisproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/testkit/redisserver"
)

// SentinelInstalled reports whether StartReplicated can run: real servers in use and
// redis-sentinel on PATH (apt: redis-sentinel).
func SentinelInstalled() bool {
	_, err := exec.LookPath("redis-sentinel")
	return UseReal() && err == nil
}

// ReplicatedOptions shape a Sentinel-managed master and replica.
type ReplicatedOptions struct {
	// Name is the master's name in Sentinel (default "seckill").
	Name string
	// Sentinels is how many sentinels watch the master (default 3); the quorum is their majority.
	Sentinels int
	// DownAfter: how long the master may not answer before a sentinel thinks it down (default 500ms).
	DownAfter time.Duration
	// FailoverTimeout bounds one failover attempt (default 2s).
	FailoverTimeout time.Duration
}

// Replicated is one master, one replica of it, and sentinels watching them, all real processes
// on free loopback ports. Every process is stopped by the pid it was started with.
type Replicated struct {
	Name      string
	Master    *Server
	Replica   *Server
	Sentinels []*Sentinel
	dir       string
}

// Sentinel is one redis-sentinel process.
type Sentinel struct {
	Addr string
	ID   string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartReplicated starts the master, its replica (and waits for their link), then the sentinels,
// each told the others and the replica in its configuration so that no discovery round is
// needed, and waits until every sentinel sees a usable quorum, the replica and the other
// sentinels. Without redis-sentinel it returns ErrNotInstalled.
func StartReplicated(ctx context.Context, opt ReplicatedOptions) (*Replicated, error) {
	if !SentinelInstalled() {
		return nil, fmt.Errorf("%w: redis-sentinel (apt: redis-sentinel) and a real redis-server", ErrNotInstalled)
	}
	if opt.Name == "" {
		opt.Name = "seckill"
	}
	if opt.Sentinels <= 0 {
		opt.Sentinels = 3
	}
	if opt.DownAfter <= 0 {
		opt.DownAfter = 500 * time.Millisecond
	}
	if opt.FailoverTimeout <= 0 {
		opt.FailoverTimeout = 2 * time.Second
	}
	dir, err := os.MkdirTemp("", "seckill-sentinel-")
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	r := &Replicated{Name: opt.Name, dir: dir}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	// Diskless sync without its default 5 s delay: the replica's first sync takes milliseconds.
	if r.Master, err = Start(Options{Args: []string{"--repl-diskless-sync-delay", "0"}}); err != nil {
		return nil, err
	}
	_, mport, _ := net.SplitHostPort(r.Master.Addr)
	// The replica gets the same setting: promoted, it syncs the old master when that rejoins.
	if r.Replica, err = Start(Options{Args: []string{"--replicaof", "127.0.0.1", mport,
		"--repl-diskless-sync-delay", "0"}}); err != nil {
		return nil, err
	}
	if err := waitInfo(ctx, r.Replica.Addr, "replication", 10*time.Second, "master_link_status:up"); err != nil {
		return nil, fmt.Errorf("redisproc: replica of %s: %w", r.Master.Addr, err)
	}

	// A port picked free can be taken by another process before its sentinel binds it (tests run
	// in parallel); then every sentinel starts again on new ports, since each one's
	// configuration names all the others.
	for try := 1; ; try++ {
		err := r.startSentinels(dir, opt, mport)
		if err == nil {
			break
		}
		for _, s := range r.Sentinels {
			s.Stop()
		}
		r.Sentinels = nil
		if try == 4 || !redisserver.PortTaken(err) {
			return nil, err
		}
	}
	if err := r.waitReady(ctx, 15*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

// sentinelPort picks a sentinel's port (a test makes it pick a taken one).
var sentinelPort = FreePort

// startSentinels picks opt.Sentinels free ports and starts a sentinel on each, monitoring the
// master on mport with the replica known.
func (r *Replicated) startSentinels(dir string, opt ReplicatedOptions, mport string) error {
	// Ports and ids first: every sentinel's configuration names all the others.
	for range opt.Sentinels {
		port, err := sentinelPort()
		if err != nil {
			return err
		}
		id := make([]byte, 20)
		if _, err := rand.Read(id); err != nil {
			return fmt.Errorf("redisproc: sentinel id: %w", err)
		}
		r.Sentinels = append(r.Sentinels, &Sentinel{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			ID: hex.EncodeToString(id)})
	}
	_, rport, _ := net.SplitHostPort(r.Replica.Addr)
	quorum := opt.Sentinels/2 + 1
	for _, s := range r.Sentinels {
		_, port, _ := net.SplitHostPort(s.Addr)
		var b strings.Builder
		fmt.Fprintf(&b, "port %s\nbind 127.0.0.1\ndaemonize no\nprotected-mode no\ndir %s\nlogfile %s\n",
			port, dir, filepath.Join(dir, "sentinel-"+port+".log"))
		fmt.Fprintf(&b, "sentinel myid %s\n", s.ID)
		fmt.Fprintf(&b, "sentinel monitor %s 127.0.0.1 %s %d\n", opt.Name, mport, quorum)
		fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", opt.Name, opt.DownAfter.Milliseconds())
		fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", opt.Name, opt.FailoverTimeout.Milliseconds())
		fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", opt.Name)
		fmt.Fprintf(&b, "sentinel known-replica %s 127.0.0.1 %s\n", opt.Name, rport)
		for _, o := range r.Sentinels {
			if o != s {
				_, oport, _ := net.SplitHostPort(o.Addr)
				fmt.Fprintf(&b, "sentinel known-sentinel %s 127.0.0.1 %s %s\n", opt.Name, oport, o.ID)
			}
		}
		conf := filepath.Join(dir, "sentinel-"+port+".conf")
		// Sentinel rewrites its file as its view changes: it must be writable.
		if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("redisproc: %w", err)
		}
		if err := s.start(conf); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sentinel) start(conf string) error {
	cmd := exec.Command("redis-sentinel", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisproc: start redis-sentinel on %s: %w", s.Addr, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := waitPing(s.Addr, 5*time.Second, done, cmd.Process.Pid); err != nil {
		s.Stop()
		return fmt.Errorf("redisproc: redis-sentinel on %s (config %s): %w", s.Addr, conf, err)
	}
	return nil
}

// Stop kills the sentinel (SIGKILL) and waits until it is gone.
func (s *Sentinel) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
		s.cmd = nil
	}
}

// Client opens a Sentinel client on s.
func (s *Sentinel) Client() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
}

// waitReady waits until every sentinel reports a usable quorum, the replica (flags exactly
// "slave": connected, not down) and every other sentinel.
func (r *Replicated) waitReady(ctx context.Context, limit time.Duration) error {
	return r.eachSentinel(ctx, limit, func(ctx context.Context, c *redis.SentinelClient) (bool, string, error) {
		if _, err := c.CkQuorum(ctx, r.Name).Result(); err != nil {
			return false, "ckquorum: " + err.Error(), nil
		}
		reps, err := c.Replicas(ctx, r.Name).Result()
		if err != nil || len(reps) != 1 || reps[0]["flags"] != "slave" || reps[0]["master-link-status"] != "ok" {
			return false, fmt.Sprintf("replicas %v %v", reps, err), nil
		}
		sens, err := c.Sentinels(ctx, r.Name).Result()
		if err != nil || len(sens) != len(r.Sentinels)-1 {
			return false, fmt.Sprintf("sentinels %v %v", sens, err), nil
		}
		for _, s := range sens {
			if s["flags"] != "sentinel" {
				return false, fmt.Sprintf("sentinel %s flags %s", s["name"], s["flags"]), nil
			}
		}
		return true, "", nil
	})
}

// WaitMaster waits until every sentinel names addr as the master and addr answers as a master.
func (r *Replicated) WaitMaster(ctx context.Context, addr string, limit time.Duration) error {
	err := r.eachSentinel(ctx, limit, func(ctx context.Context, c *redis.SentinelClient) (bool, string, error) {
		got, err := c.GetMasterAddrByName(ctx, r.Name).Result()
		if err != nil || len(got) != 2 {
			return false, fmt.Sprint(got, err), nil
		}
		now := net.JoinHostPort(got[0], got[1])
		return now == addr, "master " + now, nil
	})
	if err != nil {
		return err
	}
	return waitInfo(ctx, addr, "replication", limit, "role:master")
}

// eachSentinel polls cond on every sentinel in turn until it holds for all, or limit passes.
func (r *Replicated) eachSentinel(ctx context.Context, limit time.Duration,
	cond func(context.Context, *redis.SentinelClient) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for _, s := range r.Sentinels {
		c := s.Client()
		last := ""
		for {
			ok, why, err := cond(ctx, c)
			if err != nil {
				_ = c.Close()
				return err
			}
			if ok {
				break
			}
			last = why
			select {
			case <-ctx.Done():
				_ = c.Close()
				return fmt.Errorf("redisproc: sentinel %s not there within %s: %w (last: %s)", s.Addr, limit, ctx.Err(), tail(last, 400))
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = c.Close()
	}
	return nil
}

// waitInfo waits until INFO section on addr contains want.
func waitInfo(ctx context.Context, addr, section string, limit time.Duration, want string) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second})
	defer c.Close()
	last := ""
	for {
		info, err := c.Info(ctx, section).Result()
		if err == nil && strings.Contains(info, want) {
			return nil
		}
		last = fmt.Sprint(info, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("no %q in INFO %s of %s within %s: %w (last: %s)", want, section, addr, limit, ctx.Err(), tail(last, 300))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// SentinelAddrs lists the sentinels' addresses.
func (r *Replicated) SentinelAddrs() []string {
	out := make([]string, len(r.Sentinels))
	for i, s := range r.Sentinels {
		out[i] = s.Addr
	}
	return out
}

// FailoverClient opens a go-redis client that finds the master through the sentinels, as the
// service does with redis.sentinelMaster (short timeouts, so a dead master fails fast).
func (r *Replicated) FailoverClient() *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: r.Name, SentinelAddrs: r.SentinelAddrs(),
		PoolSize: 16, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second,
		WriteTimeout: time.Second})
}

// HoldBackReplication stops the replica (SIGSTOP) and drops its link on the master, so no
// write made from now on reaches it: paused, it can neither read what is already in its
// socket after the drop nor reconnect. Resume it with r.Replica.Resume().
func (r *Replicated) HoldBackReplication(ctx context.Context) error {
	if err := r.Replica.Pause(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Master.Addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	if err := c.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		return fmt.Errorf("redisproc: CLIENT KILL TYPE replica on %s: %w", r.Master.Addr, err)
	}
	return waitInfo(ctx, r.Master.Addr, "replication", 5*time.Second, "connected_slaves:0")
}

// Close stops the sentinels, then the replica and the master, and removes the directory.
func (r *Replicated) Close() {
	for _, s := range r.Sentinels {
		s.Stop()
	}
	if r.Replica != nil {
		_ = r.Replica.Resume() // a stopped process is killed all the same; resumed, it exits cleanly
		r.Replica.Close()
	}
	if r.Master != nil {
		r.Master.Close()
	}
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}
