package interop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/testredis"
)

// The crash test runs every holder and waiter in a process of its own (this test binary again,
// told what to be by the environment) and kills them all with SIGKILL: nothing of theirs runs
// after that, no release, no leaving the queue, no last renewal, as for a real crash.
const childEnv = "SECKILL_INTEROP_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(child(spec))
	}
	testredis.RunParallel(m, 6)
}

// child is one process of the crash test: spec is "mode role addr key lease threadWait". A
// holder takes the lock and says "held"; a waiter says "waiting" and waits (for 5 minutes, it is
// killed long before). Both then stay until killed.
func child(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 6 {
		fmt.Fprintf(os.Stderr, "child spec %q: want 6 fields\n", spec)
		return 2
	}
	mode, role, addr, key := f[0], f[1], f[2], f[3]
	lease, err1 := time.ParseDuration(f[4])
	threadWait, err2 := time.ParseDuration(f[5])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	opts := []lock.Option{lock.WithLease(lease)}
	if strings.HasPrefix(mode, "fair") {
		opts = append(opts, lock.WithThreadWait(threadWait)) // 0: each waiter's own wait
	}
	var l *lock.Locker
	var err error
	switch mode {
	case "reentrant":
		l, err = lock.NewReentrant(rdb, opts...)
	case "fair", "fair-own-wait":
		l, err = lock.NewFair(rdb, opts...)
	case "fenced":
		l, err = lock.NewFenced(rdb, opts...)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	if role == "holder" {
		if _, err := l.Acquire(ctx, key, lock.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("held")
	} else {
		fmt.Println("waiting")
		if _, err := l.Acquire(ctx, key, lock.Options{Wait: waiterWait(mode)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("held")
	}
	select {}
}

// waiterWait is how long a waiter of mode waits. The fenced lock's waiters queue in Redis
// (lock/line.go) until their own deadline, and so do the reentrant lock's processes in its
// nomination line (lock/nomination.go), so a dead one's entry lives that long: the bound of
// what it leaves is its wait. So does the fair lock's queue without a thread wait
// (fair-own-wait); with one (fair), the queue lives by Redisson's chained deadlines instead.
func waiterWait(mode string) time.Duration {
	if mode == "fenced" || mode == "fair-own-wait" || mode == "reentrant" {
		return ownWait
	}
	return 5 * time.Minute
}

const ownWait = 4 * time.Second

// startChild starts one process of the crash test and waits for its first line.
func startChild(t *testing.T, spec, want string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- s.Text()
		for s.Scan() { // a waiter must never get the lock while its holder lives
			t.Errorf("child %q said %q", spec, s.Text())
		}
	}()
	select {
	case got := <-line:
		if got != want {
			t.Fatalf("child %q said %q, want %q", spec, got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("child %q said nothing", spec)
	}
	return cmd
}

// TestLeftoversAfterCrash: one holder and two waiters of a reentrant, a fair and a fenced lock,
// each in its own process, are killed with SIGKILL while the waiters wait. Every key of the lock
// is then gone within its bound plus a margin: the lease for the reentrant and fenced locks (the
// watchdog had renewed it at most a third of a lease before) and the waiters' own wait for the
// fenced line and the reentrant lock's nomination line; for the fair lock's queue with a thread wait (what Java clients on it need), the
// last waiter's deadline, at most lease + waiters × thread wait; without one (the library's and
// the service's default), max(lease, the waiters' own wait and a quarter of it more, at most a
// second). The fenced lock's token counter
// stays, without TTL, on purpose.
func TestLeftoversAfterCrash(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	const lease, threadWait, waiters = 2 * time.Second, time.Second, 2
	const margin = time.Second
	for _, mode := range []string{"reentrant", "fair", "fair-own-wait", "fenced"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rdb := srv.Client()
			defer rdb.Close()
			ctx := context.Background()
			key := "interop-crash-" + mode + "-lock" // no key is a substring of another (the KEYS check below)
			keys := []string{key}
			bound := lease
			tw := threadWait
			switch mode {
			case "fair", "fair-own-wait":
				_, q, d, _ := rkeys(key)
				keys = append(keys, q, d)
				bound = lease + waiters*threadWait
				if mode == "fair-own-wait" {
					// The waiters' own wait, and the slack a join adds when it extends the queue
					// (a quarter of the wait, at most a second: lock/script/lua/fair_acquire.lua).
					bound, tw = max(lease, ownWait+min(ownWait/4, time.Second)), 0
				}
			case "fenced":
				// the lock, its line of waiters and their entries, its token counter
				keys = libraryKeys(t, lock.NewFenced, rdb, key)
				bound = max(lease, ownWait)
			case "reentrant":
				// the lock and its nomination line
				keys = libraryKeys(t, lock.NewReentrant, rdb, key)
				bound = max(lease, ownWait)
			}
			spec := func(role string) string {
				return fmt.Sprintf("%s %s %s %s %s %s", mode, role, srv.Addr, key, lease, tw)
			}
			procs := []*exec.Cmd{startChild(t, spec("holder"), "held")}
			for range waiters {
				procs = append(procs, startChild(t, spec("waiter"), "waiting"))
			}
			// Wait until both waiters wait where a release would reach them: in the queue, or
			// (reentrant) subscribed to their process's nomination channel of the lock, which each
			// process's first waiter joins after the unlock channel (that one by pattern, which
			// NUMSUB leaves out).
			waitFor(t, 10*time.Second, "the waiters", func() bool {
				switch mode {
				case "fair", "fair-own-wait":
					return rdb.LLen(ctx, keys[1]).Val() == waiters
				case "fenced":
					return rdb.LLen(ctx, keys[1]).Val() == waiters
				}
				return len(rdb.PubSubChannels(ctx, "*{"+key+"}:*").Val()) == waiters
			})
			var ttls []string
			for _, k := range keys {
				ttls = append(ttls, fmt.Sprintf("%s %v", k, rdb.PTTL(ctx, k).Val()))
			}
			for _, p := range procs {
				if err := p.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			killed := time.Now()
			t.Logf("TTLs at the kill: %s", strings.Join(ttls, ", "))
			stays := func(k string) bool { return mode == "fenced" && k == key+":token" }
			for {
				var left []string
				for _, k := range keys {
					if !stays(k) && rdb.Exists(ctx, k).Val() == 1 {
						left = append(left, k)
					}
				}
				if len(left) == 0 {
					break
				}
				if time.Since(killed) > bound+margin {
					t.Fatalf("%v still there %v after the crash, want gone within %v + %v", left, time.Since(killed).Round(time.Millisecond), bound, margin)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("every key gone %v after the crash (bound %v)", time.Since(killed).Round(time.Millisecond), bound)
			if mode == "fenced" {
				if n, ttl := rdb.Exists(ctx, key+":token").Val(), rdb.PTTL(ctx, key+":token").Val(); n != 1 || ttl != -1 {
					t.Errorf("token counter: exists %d, PTTL %v; want kept without TTL", n, ttl)
				}
			}
			if got := rdb.Keys(ctx, "*"+key+"*").Val(); slices.ContainsFunc(got, func(k string) bool { return !stays(k) }) {
				t.Errorf("keys left: %v", got)
			}
		})
	}
}

// libraryKeys are the keys the library's lock built by newLock uses for the lock called key
// (Locker.Keys), the lock key first.
func libraryKeys(t *testing.T, newLock func(redis.UniversalClient, ...lock.Option) (*lock.Locker, error), rdb redis.UniversalClient, key string) []string {
	t.Helper()
	l, err := newLock(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Keys(key)
}
