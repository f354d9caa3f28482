package conformance

// The conformance suite: every clause of the contract in docs/library.md ("Guarantees") run
// against every kind of lock, each clause a subtest named after its number. A kind is added to
// the library by adding it to conformanceKinds, and it is not done until every clause passes.
// Each subtest runs on Redis servers of its own (real redis-server when installed, else the
// in-process one), reached through a proxy that can stop answering, so "a server that does not
// answer" means the same on both.

import (
	"context"
	"errors"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// conformanceKind is one kind of lock as a user builds it.
type conformanceKind struct {
	name string
	// constructor is the exported constructor it is built with.
	constructor string
	// masters: built over three independent masters, else on one server.
	masters bool
	// owners: honours Options.Owner (re-entry).
	owners bool
	// cluster: the single-server kind through a *redis.ClusterClient on a real 3-master Redis
	// Cluster (the long run only; each kind's clauses then share one cluster and run in turn).
	cluster bool
	// opts are the options that make the kind (on top of the constructor).
	opts []lock.Option
	// nodes are the cluster's, when cluster.
	nodes []*locktest.Server
	// build is the constructor.
	build func(one redis.UniversalClient, masters []redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error)
	// honoured are the options the constructor takes (docs/library.md's table); every other is
	// refused.
	honoured []string
}

func single(f func(redis.UniversalClient, ...lock.Option) (*lock.Locker, error)) func(redis.UniversalClient, []redis.UniversalClient, ...lock.Option) (*lock.Locker, error) {
	return func(one redis.UniversalClient, _ []redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error) {
		return f(one, opts...)
	}
}

func multi(f func([]redis.UniversalClient, ...lock.Option) (*lock.Locker, error)) func(redis.UniversalClient, []redis.UniversalClient, ...lock.Option) (*lock.Locker, error) {
	return func(_ redis.UniversalClient, masters []redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error) {
		return f(masters, opts...)
	}
}

var conformanceKinds = []conformanceKind{
	{name: "lua", constructor: "NewLua", build: single(lock.NewLua), honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithReplicas"}},
	{name: "reentrant", constructor: "NewReentrant", owners: true, build: single(lock.NewReentrant),
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithReplicas", "WithShardedPubSub"}},
	{name: "fair", constructor: "NewFair", owners: true, build: single(lock.NewFair),
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithReplicas", "WithShardedPubSub", "WithThreadWait"}},
	{name: "fenced", constructor: "NewFenced", build: single(lock.NewFenced), honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithRFencedLockLayout", "WithReplicas"}},
	{name: "fenced-rfenced", constructor: "NewFenced", owners: true, build: single(lock.NewFenced), opts: []lock.Option{lock.WithRFencedLockLayout()},
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithRFencedLockLayout", "WithReplicas", "WithShardedPubSub"}},
	{name: "multilock", constructor: "NewMultilock", masters: true, owners: true, build: multi(lock.NewMultilock),
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithRetryDelay"}},
	{name: "redlock", constructor: "NewRedlock", masters: true, build: multi(lock.NewRedlock),
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithDriftFactor", "WithRetryDelay", "WithFencingTokens"}},
	{name: "redlock-fenced", constructor: "NewRedlock", masters: true, build: multi(lock.NewRedlock), opts: []lock.Option{lock.WithFencingTokens()},
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithDriftFactor", "WithRetryDelay", "WithFencingTokens"}},
	// NewReadWrite's write side is a mutex, held to every clause. Its read side shares, so the
	// clauses of exclusion and of waking a waiter do not apply to it as written (docs/library.md).
	{name: "readwrite-write", constructor: "NewReadWrite", owners: true, build: single(writeSide),
		honoured: []string{"WithLease", "WithLogger", "WithInstanceID", "WithReplicas", "WithShardedPubSub"}},
}

// writeSide is NewReadWrite's write side alone: its read side, closed at once, holds nothing.
func writeSide(c redis.UniversalClient, opts ...lock.Option) (*lock.Locker, error) {
	read, write, err := lock.NewReadWrite(c, opts...)
	if err != nil {
		return nil, err
	}
	return write, read.Close()
}

// allOptions is every option of the library, by name.
var allOptions = map[string]lock.Option{
	"WithLease":             lock.WithLease(time.Second),
	"WithLogger":            lock.WithLogger(nil),
	"WithInstanceID":        lock.WithInstanceID("conformance"),
	"WithDriftFactor":       lock.WithDriftFactor(0.02),
	"WithFencingTokens":     lock.WithFencingTokens(),
	"WithRetryDelay":        lock.WithRetryDelay(time.Millisecond, 2*time.Millisecond),
	"WithReplicas":          lock.WithReplicas(0, 0),
	"WithShardedPubSub":     lock.WithShardedPubSub(false),
	"WithThreadWait":        lock.WithThreadWait(time.Second),
	"WithRFencedLockLayout": lock.WithRFencedLockLayout(),
}

// clause is one numbered guarantee of docs/library.md.
type clause struct {
	n    string
	name string
	run  func(t *testing.T, k conformanceKind)
}

var clauses = []clause{
	{"1", "exclusion", clauseExclusion},
	{"2", "refresh", clauseRefresh},
	{"3", "release-twice", clauseReleaseTwice},
	{"4", "release-unanswered", clauseReleaseUnanswered},
	{"5", "cancel-mid-wait", clauseCancelMidWait},
	{"6", "wait-unanswered", clauseWaitUnanswered},
	{"7", "close", clauseClose},
	{"8", "lost", clauseLost},
	{"9", "wake-without-polling", clauseWake},
	{"10", "options", clauseOptions},
	{"11", "crashed-holder", clauseCrashedHolder},
	{"12", "crashed-waiters", clauseCrashedWaiters},
	{"13", "no-lost-wake-up", clauseNoLostWakeUp},
	{"14", "restart", clauseRestart},
	{"20", "release-ends-the-lease", clauseReleaseEnds},
	{"21", "lost-on-time", clauseLostOnTime},
	{"22", "errors-say-what-happened", clauseErrors},
	{"22", "long-outage", outageLongerThanAGiveBack},
	{"23", "reply-lost", clauseReplyLost},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, k := range conformanceKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range clauses {
				t.Run(c.n+"-"+c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, k)
				})
			}
		})
	}
}

// TestShardedResubscription: clause 14 (a subscription that comes back rings every head,
// waiting.go rule 6) for the kinds that can wait with SSUBSCRIBE, made to, on one Redis 7
// server: the cluster run cannot restart its servers.
func TestShardedResubscription(t *testing.T) {
	t.Parallel()
	if s := locktest.New(t); s.Kind != locktest.KindReal {
		t.Skip("the in-process Redis has no SSUBSCRIBE")
	}
	for _, k := range conformanceKinds {
		if k.masters || !slices.Contains(k.honoured, "WithShardedPubSub") {
			continue
		}
		k.name += "-sharded"
		k.opts = append(slices.Clone(k.opts), lock.WithShardedPubSub(true))
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			clauseRestart(t, k)
		})
	}
}

// TestConformanceOnCluster runs the clauses over the single-server kinds through a cluster
// client on a real Redis Cluster (with LOCKTEST_LONG=1, which CI sets: a cluster takes seconds to
// form). The clauses of one kind share its cluster, one after the other; those that stop the
// servers run last.
func TestConformanceOnCluster(t *testing.T) {
	t.Parallel()
	if !long() {
		t.Skip("LOCKTEST_LONG=1 runs the suite on a Redis Cluster")
	}
	for _, k := range conformanceKinds {
		if k.masters {
			continue
		}
		k.cluster = true
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			nodes := locktest.NewCluster(t, 3)
			// Clause 6 stops the servers: last.
			six := slices.IndexFunc(clauses, func(c clause) bool { return c.n == "6" })
			ordered := append(slices.Delete(slices.Clone(clauses), six, six+1), clauses[six])
			for _, c := range ordered {
				t.Run(c.n+"-"+c.name, func(t *testing.T) {
					k := k
					k.nodes = nodes
					c.run(t, k)
				})
			}
		})
	}
}

// ownContract are the constructors of kinds that are not Lockers (they hand out no Lease, so the
// contract's clauses do not apply as written), each with the tests in lock/ that check it.
var ownContract = map[string]string{
	"NewSemaphore":          "semaphore_test.go",
	"NewExpirableSemaphore": "permit_test.go",
}

// TestConformanceCoversEveryConstructor: every exported constructor of the package is run by
// the suite, so a new kind cannot be added without passing it; a kind that is not a Locker is
// named in ownContract with its tests.
func TestConformanceCoversEveryConstructor(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "..", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := doc.New(pkgs["lock"], "lock", 0)
	for _, typ := range p.Types {
		for _, f := range typ.Funcs {
			if !strings.HasPrefix(f.Name, "New") {
				continue
			}
			if file, ok := ownContract[f.Name]; ok && typ.Name != "Locker" {
				if _, err := os.Stat(filepath.Join("..", file)); err != nil {
					t.Errorf("%s: its tests %s: %v", f.Name, file, err)
				}
				continue
			}
			if !slices.ContainsFunc(conformanceKinds, func(k conformanceKind) bool { return k.constructor == f.Name }) {
				t.Errorf("%s is not in conformanceKinds: the contract is not checked for it", f.Name)
			}
		}
	}
}

// rig is the servers of one subtest, each behind a proxy that can stop answering.
type rig struct {
	t       *testing.T
	k       conformanceKind
	servers []*locktest.Server
	proxies []*proxy
	// cut: the clients end a blocked call when its context ends (ContextTimeoutEnabled), as the
	// service's do; go-redis's default is not to.
	cut bool
	// sent counts the commands each Locker built by locker has sent.
	mu   sync.Mutex
	sent map[*lock.Locker]*atomic.Int64
}

func newRig(t *testing.T, k conformanceKind) *rig {
	if k.cluster {
		return &rig{t: t, k: k, servers: k.nodes, sent: map[*lock.Locker]*atomic.Int64{}}
	}
	n := 1
	if k.masters {
		n = 3
	}
	r := &rig{t: t, k: k, servers: locktest.NewN(t, n), sent: map[*lock.Locker]*atomic.Int64{}}
	for _, s := range r.servers {
		r.proxies = append(r.proxies, newProxy(t, s.Addr))
	}
	return r
}

// clients opens a client on every server through its proxy, as one process would, closed when
// the test ends.
func (r *rig) clients() []redis.UniversalClient {
	var out []redis.UniversalClient
	if r.k.cluster {
		var addrs []string
		for _, s := range r.servers {
			addrs = append(addrs, s.Addr)
		}
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second,
			ContextTimeoutEnabled: r.cut})
		r.t.Cleanup(func() { _ = c.Close() })
		return []redis.UniversalClient{c}
	}
	for _, p := range r.proxies {
		c := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second,
			ContextTimeoutEnabled: r.cut})
		r.t.Cleanup(func() { _ = c.Close() })
		out = append(out, c)
	}
	return out
}

// direct opens a client on every server, past the proxies: the test's own view.
func (r *rig) direct() []*redis.Client {
	var out []*redis.Client
	for _, s := range r.servers {
		out = append(out, locktest.NewClient(r.t, s))
	}
	return out
}

// locker builds the kind as a new process would (clients of its own), closed when the test ends.
func (r *rig) locker(opts ...lock.Option) *lock.Locker {
	r.t.Helper()
	cs := r.clients()
	n := new(atomic.Int64)
	for _, c := range cs {
		c.AddHook(counter{n})
	}
	l, err := r.k.build(cs[0], cs, append(slices.Clone(r.k.opts), opts...)...)
	if err != nil {
		r.t.Fatalf("%s: %v", r.k.name, err)
	}
	r.mu.Lock()
	r.sent[l] = n
	r.mu.Unlock()
	r.t.Cleanup(func() { _ = l.Close() })
	return l
}

// directLocker builds the kind on clients past the proxies: a process an outage spares.
func (r *rig) directLocker() *lock.Locker {
	var cs []redis.UniversalClient
	for _, c := range r.direct() {
		cs = append(cs, c)
	}
	return buildOn(r.t, r.k, cs)
}

// waiter starts a new Locker's acquisition of key, waiting up to wait (a lock it wins is
// released at once), and returns once it waits; its result comes on the channel.
func (r *rig) waiter(key string, wait time.Duration) <-chan error {
	w := r.locker()
	before := r.commands(w)
	got := make(chan error, 1)
	go func() {
		le, err := w.Acquire(context.Background(), key, lock.Options{Wait: wait})
		if err == nil {
			_ = le.Release(context.Background())
		}
		got <- err
	}()
	waitWaiting(r.t, r, w, before)
	return got
}

// down cuts every proxy's connections and refuses new ones (a server gone); up lets them in.
func (r *rig) down() {
	for _, p := range r.proxies {
		p.down()
	}
}

func (r *rig) up() {
	for _, p := range r.proxies {
		p.up()
	}
}

// freeze makes every server stop answering (as a SIGSTOP would); thaw lets them answer again.
func (r *rig) freeze() {
	for _, p := range r.proxies {
		p.freeze()
	}
	if r.k.cluster {
		for _, s := range r.servers {
			if err := s.Pause(); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

func (r *rig) thaw() {
	for _, p := range r.proxies {
		p.thaw()
	}
	if r.k.cluster {
		for _, s := range r.servers {
			if err := s.Resume(); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

// keys lists the keys left on every server but the fencing token counters, which outlive their
// locks on purpose.
func (r *rig) keys() []string {
	var out []string
	for _, c := range r.direct() {
		ks, err := c.Keys(context.Background(), "*").Result()
		if err != nil {
			r.t.Fatal(err)
		}
		for _, k := range ks {
			if !strings.Contains(k, "token") {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// acquire is Acquire that fails the test on an error. It waits up to 5 s for a free lock, so
// a busy machine that makes attempts miss their few milliseconds per master (Redlock: a 20th of
// the lease) for a while does not fail the test.
func acquire(t *testing.T, l *lock.Locker, key string, opts lock.Options) *lock.Lease {
	t.Helper()
	opts.Wait = max(opts.Wait, 5*time.Second)
	le, err := l.Acquire(context.Background(), key, opts)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	return le
}

// heldByOther reports whether another Locker's single attempt fails (the lock is held).
func heldByOther(t *testing.T, other *lock.Locker, key string) bool {
	t.Helper()
	le, err := other.Acquire(context.Background(), key, lock.Options{})
	switch {
	case err == nil:
		if rerr := le.Release(context.Background()); rerr != nil {
			t.Fatalf("release %s: %v", key, rerr)
		}
		return false
	case errors.Is(err, lock.ErrNotObtained):
		return true
	}
	t.Fatalf("single attempt on %s: %v", key, err)
	return false
}

// free fails the test unless other gets the lock within 2 s (and gives it back).
func free(t *testing.T, other *lock.Locker, key string) {
	t.Helper()
	acquire(t, other, key, lock.Options{}).Release(context.Background())
}

// Clause 1: two Lockers (two processes) never hold one lock at once, and a release lets the
// other in.
func clauseExclusion(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a, b := r.locker(), r.locker()
	le := acquire(t, a, "c1", lock.Options{})
	if !heldByOther(t, b, "c1") {
		t.Fatal("a second Locker took the lock while the first held it")
	}
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	free(t, b, "c1")
}

// Clause 2: Refresh while held keeps the lock for a full lease from the refresh; once the lease
// has run out and the lock is someone else's, Refresh is ErrNotHeld.
func clauseRefresh(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a, b := r.locker(), r.locker()
	const lease = 600 * time.Millisecond
	for _, explicit := range []bool{true, false} {
		key := "c2-watchdog"
		if explicit {
			key = "c2-explicit"
		}
		begun := time.Now() // the lease began after this, on every server
		le := acquire(t, a, key, lock.Options{Lease: lease, ExplicitLease: explicit})
		// Half the lease later, a refresh: the key's TTL on every server (on a quorum of
		// Redlock's masters) is a full lease again, less the time since the refresh was sent (half a lease would be left without it). A
		// machine too busy to tell (the refresh took a quarter lease or more) tries again.
		for try := 1; ; try++ {
			time.Sleep(lease / 2)
			sent := time.Now()
			if err := le.Refresh(context.Background()); err != nil {
				// A refresh whose answer came a lease or more after the lease began may have run
				// after the lock ran out on time (a machine that stalled the call, or the server,
				// cannot tell): take the lock again and retry. One answered within the lease ran
				// while the lock was surely there, and must succeed.
				if late := time.Since(begun); late >= lease && try < 3 {
					t.Logf("explicit %v: the refresh sent %s into a %s lease was answered %s into it and failed (%v): the machine stalled, again",
						explicit, sent.Sub(begun).Round(time.Millisecond), lease, late.Round(time.Millisecond), err)
					_ = le.Release(context.Background())
					begun = time.Now()
					le = acquire(t, a, key, lock.Options{Lease: lease, ExplicitLease: explicit})
					continue
				}
				t.Fatalf("refresh while held (explicit %v): %v", explicit, err)
			}
			begun = sent
			left := r.pttl(key)
			elapsed := time.Since(sent)
			if elapsed >= lease/4 && try < 3 {
				continue
			}
			if want := lease - elapsed - 50*time.Millisecond; left < want {
				t.Fatalf("explicit %v: the key lives %s after a refresh sent %s ago, want at least %s", explicit, left, elapsed.Round(time.Millisecond), want)
			}
			break
		}
		// An explicit lease is not renewed: a machine that stalls a lease between the refresh and
		// these checks lets it run out on time, which says nothing of the refresh.
		ranOut := func() bool { return explicit && time.Since(begun) >= lease }
		if !heldByOther(t, b, key) && !ranOut() {
			t.Fatalf("explicit %v: the lock was free after a refresh", explicit)
		}
		if err := le.Release(context.Background()); err != nil {
			if !errors.Is(err, lock.ErrNotHeld) || !ranOut() {
				t.Fatalf("release after refresh (explicit %v): %v", explicit, err)
			}
			t.Logf("explicit %v: the machine stalled past the lease after the refresh; its release found it run out (%v)", explicit, err)
		}
		if err := le.Refresh(context.Background()); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("refresh after release (explicit %v): %v, want ErrNotHeld", explicit, err)
		}
	}
	// An explicit lease runs out; another takes the lock; the first holder's Refresh fails.
	le := acquire(t, a, "c2-expired", lock.Options{Lease: 200 * time.Millisecond, ExplicitLease: true})
	other, err := b.Acquire(context.Background(), "c2-expired", lock.Options{Wait: 3 * time.Second})
	if err != nil {
		t.Fatalf("the lock did not pass on when its lease ran out: %v", err)
	}
	defer other.Release(context.Background())
	if err := le.Refresh(context.Background()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("refresh after expiry: %v, want ErrNotHeld", err)
	}
}

// pttl is how long key lives where the kind holds a lock: the shortest TTL of key among the
// servers (through the cluster client on a cluster), or, for Redlock, which holds a lock (and
// refreshes it) on a quorum of its masters, the shortest among the quorum that keep it longest:
// on a busy machine a master can miss an acquisition or a refresh by its short timeout (seen:
// -2, no key, on one of three after a refresh that a quorum answered).
func (r *rig) pttl(key string) time.Duration {
	var cs []redis.UniversalClient
	if r.k.cluster {
		cs = r.clients()
	} else {
		for _, c := range r.direct() {
			cs = append(cs, c)
		}
	}
	var ttls []time.Duration
	for _, c := range cs {
		d, err := c.PTTL(context.Background(), key).Result()
		if err != nil {
			r.t.Fatal(err)
		}
		ttls = append(ttls, d)
	}
	slices.Sort(ttls)
	if r.k.constructor == "NewRedlock" {
		return ttls[len(ttls)-(len(ttls)/2+1)]
	}
	return ttls[0]
}

// Clause 3: releasing twice is ErrNotHeld, and the second release frees nothing of another's.
func clauseReleaseTwice(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a, b := r.locker(), r.locker()
	le := acquire(t, a, "c3", lock.Options{})
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	theirs := acquire(t, b, "c3", lock.Options{})
	if err := le.Release(context.Background()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
	if !heldByOther(t, a, "c3") {
		t.Fatal("a second release freed another holder's lock")
	}
	_ = theirs.Release(context.Background())
}

// Clause 4: a Release that gets no answer returns when its context ends, with ErrUnavailable and
// the context's error; the library sends it again while the server does not answer, so the lock
// is free soon after it answers; calling Release again is safe.
func clauseReleaseUnanswered(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	for _, cut := range []bool{false, true} {
		r.cut = cut
		releaseUnanswered(t, r, fmt.Sprintf("c4-cut-%v", cut))
	}
}

func releaseUnanswered(t *testing.T, r *rig, key string) {
	a, b := r.locker(), r.locker()
	le := acquire(t, a, key, lock.Options{})
	r.freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	err := le.Release(ctx)
	took := time.Since(start)
	cancel()
	r.thaw()
	if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("release on a server that does not answer: %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if took > 200*time.Millisecond+slack() {
		t.Fatalf("release took %s past a context of 200ms", took)
	}
	// The library sends the release again in the background: once the server answers, the lock
	// is free without another call (well before its 30 s lease).
	thawed := time.Now()
	free(t, b, key)
	if took := time.Since(thawed); took > time.Second {
		t.Fatalf("the lock was free %s after the server answered again", took)
	}
	if err := le.Release(context.Background()); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release again after the server answers: %v", err)
	}
}

// slack is what a busy machine may add to a bound of the contract (the race detector, CI):
// 400 ms, plus the longest the machine kept this process from running within the last 10 s (a
// test's whole measured interval), so that a bound fails on the lock, not on the machine.
func slack() time.Duration { return 400*time.Millisecond + locktest.LongestStall(10*time.Second) }

// Clause 5: a context ended mid-wait returns within 100 ms with ErrNotObtained and ctx.Err(),
// and leaves no entry of the waiter behind.
func clauseCancelMidWait(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a, b := r.locker(), r.locker()
	le := acquire(t, a, "c5", lock.Options{})
	before := r.commands(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var cancelled atomic.Int64
	go func() {
		_, err := b.Acquire(ctx, "c5", lock.Options{Wait: 10 * time.Second})
		done <- err
	}()
	waitWaiting(t, r, b, before)
	cancelled.Store(time.Now().UnixNano())
	cancel()
	err := <-done
	took := time.Since(time.Unix(0, cancelled.Load()))
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("cancelled wait: %v, want ErrNotObtained and context.Canceled, not ErrUnavailable (Redis is healthy)", err)
	}
	if took > 100*time.Millisecond+slack() {
		t.Fatalf("cancelled wait returned %s after the cancel", took)
	}
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Nothing of the waiter is left: once the holder has released, no key but the token
	// counters remains (the release finds no waiter to hand the lock to).
	deadline := time.Now().Add(2 * time.Second)
	for left := r.keys(); len(left) > 0; left = r.keys() {
		if time.Now().After(deadline) {
			t.Fatalf("left behind by a cancelled waiter: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// commands is how many commands l has sent so far.
func (r *rig) commands(l *lock.Locker) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[l].Load()
}

// waitWaiting returns once l's waiter is waiting: l has sent a command since before (its first
// attempt, which found the lock held) and 50 ms more have passed for it to settle in line.
func waitWaiting(t *testing.T, r *rig, l *lock.Locker, before int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.commands(l) == before {
		if time.Now().After(deadline) {
			t.Fatal("the waiter sent nothing in 5 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// Clause 6: Wait is honoured when a server does not answer: the acquisition returns within
// Wait + 500 ms with ErrNotObtained and ErrUnavailable, whether the server is frozen or down.
func clauseWaitUnanswered(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a := r.locker()
	r.cut = true
	cut := r.locker()
	const wait = 400 * time.Millisecond
	check := func(what string) {
		var wg sync.WaitGroup
		for _, l := range []*lock.Locker{a, cut} {
			wg.Go(func() { checkWait(t, l, what, wait) }) // reports with t.Errorf
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	r.freeze()
	check("frozen")
	r.thaw()
	for _, s := range r.servers {
		s.Stop()
	}
	check("down")
}

func checkWait(t *testing.T, a *lock.Locker, what string, wait time.Duration) {
	start := time.Now()
	_, err := a.Acquire(context.Background(), "c6-"+what, lock.Options{Wait: wait})
	took := time.Since(start)
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("%s: %v, want ErrNotObtained and ErrUnavailable", what, err)
	}
	if took > wait+500*time.Millisecond+slack() {
		t.Errorf("%s: returned after %s with a wait of %s", what, took, wait)
	}
	t.Logf("%s: %s for a wait of %s", what, took.Round(time.Millisecond), wait)
}

// Clause 7: Close ends every wait of that Locker within 100 ms with ErrClosed; a later Acquire
// fails at once the same way; a lease still held is given back by Close (its Lost closed, the
// lock free for another Locker), and the holder's Release then answers how that went.
func clauseClose(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a, b := r.locker(), r.locker()
	holder := acquire(t, a, "c7", lock.Options{})
	mine := acquire(t, b, "c7-mine", lock.Options{})
	before := r.commands(b)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := b.Acquire(context.Background(), "c7", lock.Options{Wait: 10 * time.Second})
			errs <- err
		}()
	}
	waitWaiting(t, r, b, before)
	closed := time.Now()
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for range 3 {
		err := <-errs
		if !errors.Is(err, lock.ErrClosed) || !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("wait ended by Close: %v, want ErrNotObtained and ErrClosed", err)
		}
	}
	if took := time.Since(closed); took > 100*time.Millisecond+slack() {
		t.Fatalf("the waits ended %s after Close", took)
	}
	start := time.Now()
	if _, err := b.Acquire(context.Background(), "c7-later", lock.Options{Wait: time.Second}); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("acquire on a closed Locker: %v, want ErrClosed", err)
	} else if took := time.Since(start); took > 10*time.Millisecond+slack() {
		t.Fatalf("acquire on a closed Locker took %s", took)
	}
	select {
	case <-mine.Lost():
	default:
		t.Fatal("Lost of a lease held across Close is open")
	}
	free(t, a, "c7-mine")
	if err := mine.Release(context.Background()); err != nil {
		t.Fatalf("release of a lease Close gave back: %v, want how Close's release ended (nil)", err)
	}
	if err := mine.Release(context.Background()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release of a lease Close gave back: %v, want ErrNotHeld", err)
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Clause 8: Lost is never nil; for a lease nothing renews it closes when the lease has run out
// by the holder's clock, never before, and a watched lease's stays open while it is renewed.
func clauseLost(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a := r.locker(lock.WithLease(time.Second))
	watched := acquire(t, a, "c8-watched", lock.Options{})
	if watched.Lost() == nil {
		t.Fatal("Lost is nil")
	}
	// The lease counts from when the attempt that took it was sent, so the clock starts before
	// Acquire: an acquisition slowed down (three masters under -race) spends part of the lease.
	// A lease given back, by Release or ReleaseAfter, has its Lost closed at once: it no longer
	// protects anything.
	var given []*lock.Lease
	for _, name := range []string{"c8-released", "c8-released-after"} {
		// Long enough not to run out on a busy machine before they are given back.
		given = append(given, acquire(t, a, name, lock.Options{Lease: 3 * time.Second, ExplicitLease: true}))
	}
	start := time.Now()
	le := acquire(t, a, "c8", lock.Options{Lease: 300 * time.Millisecond, ExplicitLease: true})
	if le.Lost() == nil {
		t.Fatal("Lost of an explicit lease is nil")
	}
	for _, g := range given {
		select {
		case <-g.Lost():
			t.Fatal("Lost of a held lease closed before its lease ran out")
		default:
		}
	}
	if err := given[0].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := r.direct()[0].Pipeline()
	ping := p.Ping(context.Background())
	if err := given[1].ReleaseAfter(context.Background(), p); err != nil || ping.Err() != nil {
		t.Fatalf("ReleaseAfter: %v, its pipeline: %v", err, ping.Err())
	}
	for i, g := range given {
		select {
		case <-g.Lost():
		default:
			t.Errorf("Lost of a lease given back by %s is open", []string{"Release", "ReleaseAfter"}[i])
		}
	}
	select {
	case <-le.Lost():
		if took := time.Since(start); took < 250*time.Millisecond {
			t.Fatalf("Lost closed after %s, before the 300ms lease ran out", took)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Lost not closed 2 s after a 300ms explicit lease")
	}
	// A lease taken after a wait longer than itself is not lost at once: its lease counts from
	// when it was taken, not from when the wait began (an acquisition slowed down by a busy
	// machine, three masters under -race, may spend up to 400 ms of it).
	held := acquire(t, a, "c8-waited", lock.Options{Lease: 800 * time.Millisecond, ExplicitLease: true})
	waited := time.Now()
	after, err := a.Acquire(context.Background(), "c8-waited", lock.Options{Lease: 500 * time.Millisecond, ExplicitLease: true, Wait: 3 * time.Second})
	if err != nil {
		t.Fatalf("waiter behind an explicit lease: %v", err)
	}
	_ = held
	select {
	case <-after.Lost():
		t.Fatalf("a lease taken after a wait of %s was lost at once", time.Since(waited).Round(time.Millisecond))
	case <-time.After(60 * time.Millisecond):
	}
	_ = after.Release(context.Background())
	if k.name == "lua" {
		return // no watchdog: every lease is explicit
	}
	select {
	case <-watched.Lost():
		// A renewal is due every lease/3: a machine that stalls that long makes it late.
		locktest.FailUnlessStalled(t, 10*time.Second, time.Second/3, "a watched lease was lost after %s", time.Since(start))
	default:
	}
	if err := watched.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Clause 9: a waiter gets a released lock promptly, and while the lock is held its Locker
// sends no more than the look its kind's doc states (at most one every 250 ms, of at most two
// commands).
func clauseWake(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	a := r.locker()
	var sent atomic.Int64
	cs := r.clients()
	for _, c := range cs {
		c.AddHook(counter{&sent})
	}
	b, err := k.build(cs[0], cs, k.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	le := acquire(t, a, "c9", lock.Options{})
	got := make(chan time.Time, 1)
	go func() {
		le, err := b.Acquire(context.Background(), "c9", lock.Options{Wait: 10 * time.Second})
		got <- time.Now()
		if err == nil {
			_ = le.Release(context.Background())
		} else {
			t.Errorf("waiter: %v", err)
		}
	}()
	// The waiter settles in line: its first attempts, its subscription and the look after it. On
	// a busy machine that takes longer than on a quiet one, so wait until a quarter second passes
	// with no more than one look (two commands) in it, for at most 5 s: a waiter that polls never
	// settles, and the window below then counts its polling.
	for settled := time.Now().Add(5 * time.Second); time.Now().Before(settled); {
		n := sent.Load()
		time.Sleep(250 * time.Millisecond)
		if sent.Load()-n <= 2 {
			break
		}
	}
	before, from := sent.Load(), time.Now()
	time.Sleep(time.Second)
	// The window is what the sleep really took: on a busy machine it overshoots, and a waiter
	// that looks on time then sends more in it.
	window := time.Since(from)
	looks := sent.Load() - before
	if limit := 2*int64(window/(250*time.Millisecond)) + 2; looks > limit {
		t.Errorf("the waiter sent %d commands in %s while the lock was held: it polls (at most %d)", looks, window.Round(time.Millisecond), limit)
	}
	released := time.Now()
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	woke := (<-got).Sub(released)
	t.Logf("%s: %d commands in %s of waiting; woken %s after the release", k.name, looks, window.Round(time.Millisecond), woke.Round(time.Microsecond))
	if woke > 50*time.Millisecond+slack() {
		t.Fatalf("the waiter got the lock %s after the release", woke)
	}
}

// counter is a go-redis hook that counts the commands sent.
type counter struct{ n *atomic.Int64 }

func (counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// loseReply makes the first script its client sends once armed that ran to an answer look
// to the sender like a connection that broke under it: the command took effect, its reply never
// came.
type loseReply struct{ armed, lost *atomic.Bool }

func (loseReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h loseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		name := cmd.Name()
		ran := err == nil || errors.Is(err, redis.Nil)
		if ran && (name == "evalsha" || name == "eval" || name == "set") && h.armed.CompareAndSwap(true, false) {
			h.lost.Store(true)
			err = &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}
			cmd.SetErr(err)
		}
		return err
	}
}
func (loseReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Clause 23: an acquisition whose first script ran but whose reply was lost (the connection
// broke under it) still holds the lock once: after its one Release the lock is free at once,
// not held by a count the retry added until its lease runs out.
func clauseReplyLost(t *testing.T, k conformanceKind) {
	if k.cluster {
		t.Skip("hooks one client of a process; the cluster run shares its nodes")
	}
	r := newRig(t, k)
	var armed, lost atomic.Bool
	cs := r.clients()
	cs[0].AddHook(loseReply{&armed, &lost})
	a, err := r.k.build(cs[0], cs, r.k.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := r.locker()
	armed.Store(true)
	le := acquire(t, a, "c23", lock.Options{})
	if !lost.Load() {
		t.Fatal("no script's reply was lost: the clause tested nothing")
	}
	if err := le.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
	got, err := b.Acquire(context.Background(), "c23", lock.Options{Wait: time.Second})
	if err != nil {
		t.Fatalf("another Locker after the release: %v (the lock stayed held)", err)
	}
	_ = got.Release(context.Background())
}

// Clause 10: an option the constructor does not honour, Options.Owner on a kind without owners,
// and a zero or negative lease are errors that name what was refused.
func clauseOptions(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	cs := r.clients()
	for name, o := range allOptions {
		l, err := k.build(cs[0], cs, append(slices.Clone(k.opts), o)...)
		if slices.Contains(k.honoured, name) {
			if err != nil {
				t.Errorf("%s refused: %v", name, err)
				continue
			}
			_ = l.Close()
			continue
		}
		if err == nil {
			_ = l.Close()
			t.Errorf("%s accepted, but %s does not honour it", name, k.name)
		} else if !strings.Contains(err.Error(), name) {
			t.Errorf("%s refused without naming it: %v", name, err)
		}
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if l, err := k.build(cs[0], cs, append(slices.Clone(k.opts), lock.WithLease(d))...); err == nil {
			_ = l.Close()
			t.Errorf("WithLease(%s) accepted", d)
		}
	}
	l := r.locker()
	if _, err := l.Acquire(context.Background(), "c10", lock.Options{Lease: -time.Second}); err == nil || !strings.Contains(err.Error(), "Lease") {
		t.Errorf("Options.Lease -1s: %v, want an error naming it", err)
	}
	le, err := l.Acquire(context.Background(), "c10", lock.Options{Owner: "someone"})
	switch {
	case k.owners && err != nil:
		t.Errorf("Options.Owner on %s: %v", k.name, err)
	case !k.owners && (err == nil || !strings.Contains(err.Error(), "Owner")):
		t.Errorf("Options.Owner on %s, which has no re-entry: %v, want an error naming it", k.name, err)
	}
	if err == nil {
		_ = le.Release(context.Background())
	}
}

// proxy forwards TCP connections to a Redis server; frozen, it stops passing bytes either way
// (the connections stay open), as a server stopped with SIGSTOP looks to a client.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	isDown bool // connections are cut as they come (down)
	frozen bool
	thawed chan struct{} // closed when a freeze ends
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, thawed: make(chan struct{})}
	close(p.thawed)
	t.Cleanup(p.close)
	go p.serve()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		isDown := p.isDown
		p.mu.Unlock()
		if isDown {
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, holding each chunk while the proxy is frozen.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			<-thawed
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
}

// down makes the server look gone: every connection through the proxy is cut and new ones are
// closed at once (a reset), until up.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isDown = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isDown = false
}

func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		p.thawed = make(chan struct{})
	}
}

func (p *proxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

func (p *proxy) close() {
	p.thaw()
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// The liveness clauses (11-14) build servers of their own: a proxy per server to kill a process,
// servers to restart. On a Redis Cluster they are not run (TestConformance runs them on one
// server, or three masters).
func ownServers(t *testing.T, k conformanceKind) {
	t.Helper()
	if k.cluster {
		t.Skip("a liveness clause kills a process behind proxies of its own or restarts its servers: run by TestConformance, not on the cluster")
	}
}

// clauseCrashedHolder (11): a holder whose process dies (kill -9: its connections cut) while
// another process waits: the waiter gets the lock within max(lease, wait) + 1 s of the crash,
// whatever the dead process had queued (five waiters here, each waiting 3 s), and within the
// kind's relook bound of the instant the lock became free (no lost wake-up: a waiter that slept
// through it, say 3 s more, fails this though it is inside the first bound).
func clauseCrashedHolder(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	const lease, wait = time.Second, 3 * time.Second
	c := crashProcess(t, k, true, lease, wait)
	t.Logf("%s: the lock of the crashed holder was taken %s after the crash, %s after it became free", k.name,
		c.took.Round(time.Millisecond), (c.took - c.freeAfter).Round(time.Millisecond))
	if bound := max(lease, wait) + time.Second; c.took > bound+slack() {
		t.Fatalf("%s: the lock of a crashed holder was taken %s after the crash, want within max(lease, wait) + 1 s = %s", k.name, c.took, bound)
	}
	if lag, relook := c.took-c.freeAfter, relookBound(k, lease); lag > relook+slack() {
		t.Fatalf("%s: the waiter got the lock %s after it became free (a lost wake-up; want within %s, the kind's relook bound)", k.name, lag, relook)
	}
}

// clauseCrashedWaiters (12): a process that dies with five waiters queued (each waiting 10 s)
// holds nobody up beyond a second: the holder, elsewhere, releases, and the waiter behind the dead
// ones, in a third process, gets the lock within 1 s. The fair lock's dead waiters used to hold
// the queue up one after another (10 s here): its processes now say they are alive, and those
// that stop saying so have their waiters dropped together.
func clauseCrashedWaiters(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	c := crashProcess(t, k, false, time.Second, 10*time.Second)
	t.Logf("%s: the waiter behind 5 dead waiters got the lock %s after the release", k.name, c.took.Round(time.Millisecond))
	if c.took > time.Second+slack() {
		t.Fatalf("%s: the waiter behind a crashed process's waiters got the lock %s after the release, want within 1 s", k.name, c.took)
	}
}

// clauseNoLostWakeUp (13): a lock nobody releases (its holder is alive but lets its explicit
// lease run out) is taken by a waiter of another process within the kind's relook bound of its
// expiry (relookBound): no release wakes the waiter, its own fallback must.
func clauseNoLostWakeUp(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	const lease = 700 * time.Millisecond
	r := newRig(t, k)
	a, b := r.locker(), r.locker()
	held := acquire(t, a, "relook", lock.Options{Lease: lease, ExplicitLease: true})
	defer held.Release(context.Background())
	got := make(chan time.Time, 1)
	go func() {
		le, err := b.Acquire(context.Background(), "relook", lock.Options{Wait: 5 * time.Second})
		got <- time.Now()
		if err != nil {
			t.Errorf("waiter: %v", err)
			return
		}
		_ = le.Release(context.Background())
	}()
	time.Sleep(100 * time.Millisecond) // the waiter sleeps on its fallback
	var direct []redis.UniversalClient
	for _, c := range r.direct() {
		direct = append(direct, c)
	}
	free := time.Now().Add(freeAfter(t, k, direct, "relook"))
	lag := (<-got).Sub(free)
	t.Logf("%s: taken %s after the lock expired", k.name, lag.Round(time.Millisecond))
	if relook := relookBound(k, lease); lag > relook+slack() {
		t.Fatalf("%s: a lock that expired unreleased was taken %s after its expiry, want within %s (a lost wake-up)", k.name, lag, relook)
	}
}

// clauseRestart (14): a waiter sleeps behind a holder in another process (its fallback is the
// holder's 30 s TTL, and the release would wake it); every server restarts empty, so the lock is
// gone and no release will ever come: the waiter acquires within 1 s of the restart, woken when
// its subscription comes back (waiting.go rule 6), long before its wait or the holder's lease.
func clauseRestart(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	r := newRig(t, k)
	// Clients of their own on the servers, not through the rig's proxies: a proxy accepts a
	// connection while its server is down and then drops it, which a client cannot tell from a
	// broken connection (a real stopped server refuses it).
	locker := func() *lock.Locker {
		var cs []redis.UniversalClient
		for _, c := range r.direct() {
			cs = append(cs, c)
		}
		return buildOn(t, k, cs)
	}
	a, b := locker(), locker()
	const key = "restart"
	_ = acquire(t, a, key, lock.Options{Lease: 30 * time.Second})
	const wait = 20 * time.Second
	got := make(chan error, 1)
	go func() {
		le, err := b.Acquire(context.Background(), key, lock.Options{Wait: wait, Lease: 30 * time.Second})
		if err == nil {
			err = le.Release(context.Background())
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond) // the waiter has tried, subscribed and gone to sleep
	for _, s := range r.servers {
		s.Stop()
	}
	time.Sleep(300 * time.Millisecond)
	for _, s := range r.servers {
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	restarted := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("%s: the waiter after the restart: %v", k.name, err)
		}
		took := time.Since(restarted)
		t.Logf("%s: the waiter got the lock %s after the restart (wait %s, holder's lease 30s)", k.name, took.Round(time.Millisecond), wait)
		if took > time.Second+slack() {
			t.Fatalf("%s: the waiter got the lock %s after the restart, want within 1 s", k.name, took)
		}
	case <-time.After(wait / 2):
		t.Fatalf("%s: the waiter still waits %s after it started, behind a holder the restarted Redis no longer knows", k.name, wait/2)
	}
}

// buildOn builds a Locker of kind k (with its options) on clients (the data Redis first, or the
// masters), closed when the test ends.
func buildOn(t *testing.T, k conformanceKind, clients []redis.UniversalClient) *lock.Locker {
	t.Helper()
	l, err := k.build(clients[0], clients, k.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Clause 20: Release ends the lease whatever its context: with a context ended before the call
// (a request that timed out) Lost closes at once and the release goes out in the background, so
// another Locker gets the lock at once, not a lease later; and Close gives back what its Locker
// still holds within its bound, even when the server does not answer. With both client settings.
func clauseReleaseEnds(t *testing.T, k conformanceKind) {
	r := newRig(t, k)
	for _, cut := range []bool{false, true} {
		r.cut = cut
		key := fmt.Sprintf("c20-cut-%v", cut)
		a, b := r.locker(), r.locker()
		le := acquire(t, a, key, lock.Options{})
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		err := le.Release(ended)
		if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrUnavailable) {
			t.Fatalf("release with an ended context: %v, want context.Canceled and not ErrUnavailable", err)
		}
		if !isDone(le.Lost()) {
			t.Fatal("Lost is open after a release with an ended context")
		}
		start := time.Now()
		free(t, b, key)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("the lock was free %s after a release with an ended context, want at once", took)
		}
		if cut {
			continue // Close's bound is the release's, whatever the client: once is enough
		}
		// Close on a server that does not answer returns within its bound (a release of 2 s),
		// with the lease's Lost closed.
		c := r.locker()
		held := acquire(t, c, key+"-close", lock.Options{})
		r.freeze()
		closing := time.Now()
		_ = c.Close()
		took := time.Since(closing)
		r.thaw()
		if took > 2*time.Second+slack() {
			t.Fatalf("Close took %s on a server that does not answer, want within 2 s", took)
		}
		if !isDone(held.Lost()) {
			t.Fatal("Lost is open after Close")
		}
	}
}

// Clause 21: Lost closes before another process can hold the lock: a holder cut off from Redis
// (a partition: its connections open, no bytes moving) sees Lost closed within its lease of the
// cut, before a Locker on the other side of the partition gets the lock, whatever the client's
// timeouts; and a holder that looks at Lost when the other got it finds it closed.
func clauseLostOnTime(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	const lease = 600 * time.Millisecond
	r := newRig(t, k)
	var cs []redis.UniversalClient
	for _, c := range r.direct() {
		cs = append(cs, c)
	}
	rival := buildOn(t, k, cs)
	for _, cut := range []bool{false, true} {
		r.cut = cut
		key := fmt.Sprintf("c21-cut-%v", cut)
		holder := r.locker(lock.WithLease(lease))
		le := acquire(t, holder, key, lock.Options{})
		lost := make(chan time.Time, 1)
		go func() {
			<-le.Lost()
			lost <- time.Now()
		}()
		r.freeze()
		cut0 := time.Now()
		got, err := rival.Acquire(context.Background(), key, lock.Options{Wait: 5 * time.Second})
		gotAt := time.Now()
		if err != nil {
			r.thaw()
			t.Fatalf("the rival behind a partitioned holder: %v", err)
		}
		if !isDone(le.Lost()) {
			t.Errorf("cut %v: the rival held the lock %s after the partition while the holder's Lost was open", cut, gotAt.Sub(cut0).Round(time.Millisecond))
		}
		select {
		case at := <-lost:
			t.Logf("cut %v: Lost closed %s after the partition; the rival held the lock after %s", cut,
				at.Sub(cut0).Round(time.Millisecond), gotAt.Sub(cut0).Round(time.Millisecond))
			// A blocked renewal no longer holds Lost back until the client's read timeout (2 s
			// here): a busy machine may still fire the timer late.
			if at.Sub(cut0) > lease+time.Second {
				t.Errorf("cut %v: Lost closed %s after the partition, want within the %s lease (and a busy machine's second)", cut, at.Sub(cut0), lease)
			}
		case <-time.After(time.Second):
			t.Errorf("cut %v: the holder's Lost did not close", cut)
		}
		r.thaw()
		_ = got.Release(context.Background())
	}
}

// Clause 22: errors say what happened. An empty key, or braces that make no hash tag, are refused
// with an error naming the key, and nothing reaches Redis. A waiter rides out a server that is
// gone for a while (connections reset) within its Wait and gets the lock once it is back; a
// Wait that ends first fails with ErrUnavailable at its end, not at the first error.
func clauseErrors(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	r := newRig(t, k)
	l := r.locker()
	for _, key := range []string{"", "a{b", "a}b", "x{}y"} {
		_, err := l.Acquire(context.Background(), key, lock.Options{})
		if err == nil || errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "key") {
			t.Errorf("acquire of key %q: %v, want a refusal naming the key", key, err)
		}
	}
	if left := r.keys(); len(left) > 0 {
		t.Fatalf("refused keys left %v in Redis", left)
	}
	holder := r.directLocker()
	for _, cut := range []bool{false, true} {
		r.cut = cut
		key := fmt.Sprintf("c22-cut-%v", cut)
		le := acquire(t, holder, key, lock.Options{})
		got := r.waiter(key, 6*time.Second)
		r.down()
		// A Wait shorter than the outage ends with ErrUnavailable at its end.
		short := r.locker()
		start := time.Now()
		_, err := short.Acquire(context.Background(), key, lock.Options{Wait: 600 * time.Millisecond})
		took := time.Since(start)
		// At its end: within the last pause of the ride (at most 200 ms), not at the first error.
		if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, lock.ErrUnavailable) || took < 350*time.Millisecond {
			t.Errorf("cut %v: a wait of 600ms while the server is gone: %v after %s, want ErrUnavailable at its end", cut, err, took)
		}
		if err := le.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the outage goes on past the release
		r.up()
		back := time.Now()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("cut %v: a waiter with a 6 s wait across a 1 s outage: %v, want the lock", cut, err)
			}
			t.Logf("cut %v: the waiter got the lock %s after the server came back", cut, time.Since(back).Round(time.Millisecond))
		case <-time.After(3*time.Second + slack()):
			// A waiter whose looks all failed sleeps up to core.NoQuorumPoll (Redlock) before the
			// next, unless its resubscription rings first.
			t.Fatalf("cut %v: the waiter still waits 3 s after the server came back", cut)
		}
	}
}

// outageLongerThanAGiveBack: a waiter queued behind a lock whose lease runs out while the
// servers are gone for 2.5 s, longer than a give-back that got no answer used to be sent again
// (2 s), gets the lock soon after they are back. What it left queued in Redis when it rode is
// given back until that entry's deadline; left there, it held the waiter's next entry up until
// then, past its own wait here.
func outageLongerThanAGiveBack(t *testing.T, k conformanceKind) {
	ownServers(t, k)
	r := newRig(t, k)
	const key = "c22-long"
	acquire(t, r.directLocker(), key, lock.Options{Lease: 2 * time.Second, ExplicitLease: true}) // never released
	got := r.waiter(key, 8*time.Second)
	r.down()
	time.Sleep(2500 * time.Millisecond) // the holder's lease runs out meanwhile
	r.up()
	back := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("a waiter across a 2.5 s outage, its holder's lease ended during it: %v, want the lock", err)
		}
		t.Logf("after a 2.5 s outage the waiter got the lock %s after the server came back", time.Since(back).Round(time.Millisecond))
	case <-time.After(3*time.Second + slack()):
		t.Fatal("the waiter still waits 3 s after a 2.5 s outage ended, its holder's lease long gone")
	}
}
