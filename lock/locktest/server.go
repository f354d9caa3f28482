// Package locktest gives tests of code that uses package lock what they need to meet the faults a
// distributed lock exists for: Redis servers that can be stopped, paused (SIGSTOP) and restarted
// empty, and a go-redis hook that crashes or freezes one lock holder from outside the lock, the way
// a process dies or stops the world (a long GC pause).
//
// A Server is a real redis-server process on a free loopback port when the binary is on PATH, else
// an in-process miniredis with TTLs on the wall clock (set LOCKTEST_REDIS=embedded to force it).
// Only processes it started are ever stopped, by PID.
package locktest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Kinds of server.
const (
	KindReal     = "redis-server"
	KindEmbedded = "miniredis"
)

// Server is one Redis server on 127.0.0.1.
type Server struct {
	Addr string
	Kind string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	mini *miniredis.Miniredis
	dir  string
	args []string
}

// Options choose how to start a server.
type Options struct {
	// Embedded forces an in-process server even when redis-server is installed.
	Embedded bool
	// Port, if not 0, is the port to use; else a free one is picked.
	Port int
	// Dir holds the server's log (and nothing else: persistence is off). Default: a temp dir.
	Dir string
	// Args are extra redis-server arguments (ignored for the in-process server).
	Args []string
}

// Installed reports whether a redis-server binary is on PATH.
func Installed() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// UseReal reports whether Start would run a real redis-server: installed, and not forced off by
// LOCKTEST_REDIS=embedded.
func UseReal() bool {
	return Installed() && os.Getenv("LOCKTEST_REDIS") != "embedded"
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("locktest: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Start starts one server.
func Start(opt Options) (*Server, error) {
	port := opt.Port
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: opt.Dir, args: opt.Args}
	if opt.Embedded || !UseReal() {
		s.Kind = KindEmbedded
	} else {
		s.Kind = KindReal
		if s.dir == "" {
			d, err := os.MkdirTemp("", "locktest-redis-")
			if err != nil {
				return nil, fmt.Errorf("locktest: %w", err)
			}
			s.dir = d
		}
	}
	// A port picked free can be taken by another process before the server binds it; then
	// try another one.
	for try := 1; ; try++ {
		err := s.Restart()
		if err == nil {
			return s, nil
		}
		if opt.Port != 0 || try == 5 || !PortTaken(err) {
			return nil, err
		}
		p, perr := FreePort()
		if perr != nil {
			return nil, errors.Join(err, perr)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
}

// Restart starts the server again on the same address, empty. It is a no-op while it runs.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Kind == KindEmbedded {
		if s.mini != nil {
			return nil
		}
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if err := m.StartAddr(s.Addr); err != nil {
			return fmt.Errorf("locktest: miniredis on %s: %w", s.Addr, err)
		}
		s.mini = m
		return nil
	}
	if s.cmd != nil {
		return nil
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "no", "--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis-"+port+".log")}, s.args...)
	cmd := exec.Command("redis-server", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("locktest: start redis-server on %s: %w", s.Addr, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := WaitPing(s.Addr, 5*time.Second, done, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		<-done
		s.cmd = nil
		return fmt.Errorf("locktest: redis-server on %s (log in %s): %w", s.Addr, s.dir, err)
	}
	return nil
}

// errExited: the server exited before it answered (most often: the port was taken).
var errExited = errors.New("exited before answering PING")

// PortTaken reports whether err (from Start, Restart or WaitPing) means the port picked free was
// taken by another process before the server bound it: start again on another port.
func PortTaken(err error) bool {
	return errors.Is(err, errNotOurs) || errors.Is(err, errExited) || errors.Is(err, syscall.EADDRINUSE)
}

// errNotOurs: the port answered, but not the process just started (another test's server took
// the free port first; ours then fails to bind and exits).
var errNotOurs = errors.New("another process answers on the port")

// WaitPing waits until the server with process id pid (one that serves the Redis protocol, a
// redis-sentinel too) answers on addr; exited is closed when the process ends.
func WaitPing(addr string, limit time.Duration, exited <-chan struct{}, pid int) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			if !strings.Contains(info, "process_id:"+strconv.Itoa(pid)+"\r\n") {
				return errNotOurs
			}
			return nil
		}
		select {
		case <-exited:
			return errExited
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING answer within %s: %w", limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, like a crash) and waits until it is gone. Its data is lost.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mini != nil {
		s.mini.Close()
		s.mini = nil
	}
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
		s.cmd = nil
	}
}

// RequirePass turns on AUTH with password on the running server (CONFIG SET requirepass on a
// real one); clients without it are refused from then on.
func (s *Server) RequirePass(password string) error {
	s.mu.Lock()
	mini := s.mini
	s.mu.Unlock()
	if mini != nil {
		mini.RequireAuth(password)
		return nil
	}
	c := s.Client()
	defer c.Close()
	if err := c.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		return fmt.Errorf("locktest: requirepass on %s: %w", s.Addr, err)
	}
	return nil
}

// Pause freezes a real server (SIGSTOP); Resume continues it. In-process servers cannot be paused.
func (s *Server) Pause() error  { return s.signal(syscall.SIGSTOP) }
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("locktest: %s is not a running redis-server process", s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}

// PID is the server's process id (0 for in-process servers or when stopped).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Close stops the server and removes its temporary directory.
func (s *Server) Close() {
	s.Stop()
	if s.Kind == KindReal && s.dir != "" && filepath.Base(filepath.Dir(s.dir)) == filepath.Base(os.TempDir()) {
		_ = os.RemoveAll(s.dir)
	}
}

// Client opens a go-redis client on the server.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 64, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second})
}

// New starts one server for tb, stopped when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(Options{})
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// NewN starts n servers for tb (independent masters) at once: a real redis-server takes about
// 100 ms to answer.
func NewN(tb testing.TB, n int) []*Server {
	tb.Helper()
	out := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i], errs[i] = Start(Options{}) })
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			tb.Cleanup(s.Close)
		}
	}
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	return out
}

// NewClient opens a client on s for tb, closed when the test ends.
func NewClient(tb testing.TB, s *Server) *redis.Client {
	tb.Helper()
	c := s.Client()
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// RunParallel is a TestMain for packages whose tests mostly wait (on leases, TTLs, servers
// starting) rather than compute, each on servers of its own: it runs up to n of their parallel
// tests at once instead of GOMAXPROCS, unless -test.parallel is given.
func RunParallel(m *testing.M, n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			fmt.Fprintln(os.Stderr, "locktest:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
