// Package locktest gives tests of code that uses package lock what they need to meet the faults a
// distributed lock exists for: Redis servers that can be stopped, paused (SIGSTOP) and restarted
// empty (package redisserver), and a go-redis hook that crashes or freezes one lock holder from
// outside the lock, the way a process dies or stops the world (package fault). It imports package
// testing; the two packages it wraps do not, so a program can use them without it.
package locktest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/fault"
	"github.com/seckill-lab/seckill/testkit/redisserver"
)

// The servers (package redisserver).
type (
	Server  = redisserver.Server
	Options = redisserver.Options
)

// Kinds of server.
const (
	KindReal     = redisserver.KindReal
	KindEmbedded = redisserver.KindEmbedded
)

var (
	Start     = redisserver.Start
	Installed = redisserver.Installed
	UseReal   = redisserver.UseReal
	FreePort  = redisserver.FreePort
	PortTaken = redisserver.PortTaken
	WaitPing  = redisserver.WaitPing
)

// The faults of a holder (package fault).
type (
	Plan   = fault.Plan
	Holder = fault.Holder
)

var (
	ErrCrashed = fault.ErrCrashed
	Attach     = fault.Attach
	From       = fault.From
	Install    = fault.Install
)

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
// It also drops go-redis's own log lines ("failed to dial" while a test has stopped a server on
// purpose), and starts the stall meter (LongestStall).
func RunParallel(m *testing.M, n int) {
	redis.SetLogger(quiet{})
	WatchStalls()
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

// RunParallelOnServers is RunParallel with n tests at once under the race detector, and fast
// without it: the tests mostly wait (on leases, TTLs, servers starting), and without the race
// detector each costs little CPU, so more at once shorten the package without making the machine
// much busier.
func RunParallelOnServers(m *testing.M, n, fast int) {
	if !raceDetector {
		n = fast
	}
	RunParallel(m, n)
}

// aloneEnv marks a test binary started by Alone for the test it runs.
const aloneEnv = "LOCKTEST_ALONE"

// Alone runs the calling test in a process of its own (the test binary again, with only this
// test), for a test that counts what the whole process holds, such as its goroutines: the parent
// marks itself parallel, waits for the child and reports its failure; it returns false there,
// and the test returns. In the child it returns true, and the test goes on.
func Alone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(aloneEnv) == t.Name() {
		return true
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), aloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
	return false
}

// quiet is a go-redis logger that drops every line.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
