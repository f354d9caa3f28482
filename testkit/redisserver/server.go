// Package redisserver starts Redis servers on loopback that can be stopped, paused (SIGSTOP) and
// restarted empty: a real redis-server process on a free port when the binary is on PATH, else an
// in-process miniredis with TTLs on the wall clock (set LOCKTEST_REDIS=embedded to force it). Only
// processes it started are ever stopped, by PID. It does not import package testing, so a program
// may link it (an in-process Redis for a demo, a lab's servers); that is why it lives beside
// package locktest, which is for tests only, and not in it. Package locktest wraps it for tests.
package redisserver

import (
	"context"
	"errors"
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
	// release frees the port Stop holds while the server is down (nil: none held).
	release func()
	mini    *miniredis.Miniredis
	dir     string
	args    []string
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
		return 0, fmt.Errorf("redisserver: free port: %w", err)
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
				return nil, fmt.Errorf("redisserver: %w", err)
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
	s.free()
	if s.Kind == KindEmbedded {
		if s.mini != nil {
			return nil
		}
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if err := m.StartAddr(s.Addr); err != nil {
			return fmt.Errorf("redisserver: miniredis on %s: %w", s.Addr, err)
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
		return fmt.Errorf("redisserver: start redis-server on %s: %w", s.Addr, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := WaitPing(s.Addr, 5*time.Second, done, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		<-done
		s.cmd = nil
		return fmt.Errorf("redisserver: redis-server on %s (log in %s): %w", s.Addr, s.dir, err)
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
	s.stop()
	if s.release == nil {
		s.release = holdPort(s.Addr)
	}
}

// stop ends the server's process (s.mu held).
func (s *Server) stop() {
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

// free gives back the port Stop held (s.mu held).
func (s *Server) free() {
	if s.release != nil {
		s.release()
		s.release = nil
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
		return fmt.Errorf("redisserver: requirepass on %s: %w", s.Addr, err)
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
		return fmt.Errorf("redisserver: %s is not a running redis-server process", s.Addr)
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
	s.mu.Lock()
	s.stop()
	s.free()
	s.mu.Unlock()
	if s.Kind == KindReal && s.dir != "" && filepath.Base(filepath.Dir(s.dir)) == filepath.Base(os.TempDir()) {
		_ = os.RemoveAll(s.dir)
	}
}

// Client opens a go-redis client on the server.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 64, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second})
}
