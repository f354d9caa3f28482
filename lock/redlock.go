package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"

	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// redlockLocker is NewRedlock (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/): the Redlock
// algorithm over the independent masters (3 or 5, as configured) through redsync v4. One attempt
// SETs key <random> NX PX ttl on every master at once; it wins only with a majority of the
// masters AND a validity left, validity = ttl - time the attempt took - drift (1% of ttl,
// redsync's default); a failed attempt deletes its value on every master (compare-and-delete) so
// that a partial win blocks no one. While held, a watchdog extends the lock on the masters every
// ttl/3 (compare-and-PEXPIRE); a failed extension, or the validity running out before one
// succeeds, closes Lost so the holder knows it must not write.
//
// Retry: redsync's own loop (LockContext; defaults 32 tries, 50-250 ms apart) is not used, for
// three reasons. It bounds the number of tries, not the time, so it cannot honour Options.Wait;
// a context that ends during an attempt also cuts short that attempt's clean-up release (it runs
// on the same context), leaving the partial win on the masters for a whole ttl; and a context
// that ends between tries comes back as ErrFailed, losing ctx.Err(). So Acquire runs one
// TryLockContext per attempt on a context that the caller cannot cancel (each attempt is bounded
// by the per-node timeout, see maxNodeTimeout, and by the client's read timeout). Between
// attempts it does not sleep a fixed delay (redsync's default, 50-250 ms, leaves the lock idle
// for most of each handoff: 0.3-1.1 k sales/s were measured with it): the waiters of this
// process wait in its queue (handoff.go) and only the head attempts; a release here wakes it at
// once, a release by another process wakes it through a PUBLISH on every master
// (redlockChannel), and where no release will come (a split vote, a crashed holder) it retries
// after a random 1-10 ms, bounded by Options.Wait and ctx. Drift is redsync's default unless WithDriftFactor says
// otherwise (0.01: 1% of the ttl).
type redlockLocker struct {
	rs      *redsync.Redsync // shared: it only holds the pools; every acquisition has its own Mutex
	masters []redis.UniversalClient
	nodes   int
	quorum  int
	drift   float64
	log     *slog.Logger
	// fence: every acquisition draws a fencing token from the masters (redlock_fence.go).
	fence bool
	// instance is WithInstanceID's id, which starts every value.
	instance string
	// id starts the payload of this Locker's release messages, "<id>:<release>": its own
	// releases wake its queue directly, so its subscribers ignore them.
	id       string
	releases atomic.Uint64
	subs     []*subscriber
	queue    *handoff

	mu    sync.Mutex
	local map[string]map[*redlockLease]struct{} // leases held in this process, by key
}

// redlockChannel is where a redlock release is announced on every master.
func redlockChannel(key string) string { return "redlock__channel:" + key }

func newRedlock(d settings) (locker, error) {
	pools := make([]redsyncredis.Pool, len(d.Masters))
	for i, m := range d.Masters {
		pools[i] = goredis.NewPool(m)
	}
	l := &redlockLocker{
		rs: redsync.New(pools...), masters: d.Masters, nodes: len(pools), quorum: len(pools)/2 + 1,
		drift: d.DriftFactor, log: d.Logger, id: uuid.NewString(), local: map[string]map[*redlockLease]struct{}{},
		fence: d.Fencing, instance: d.InstanceID,
	}
	for _, m := range d.Masters {
		l.subs = append(l.subs, newSubscriber(m, d.Logger, nil, func(payload string) bool { return !strings.HasPrefix(payload, l.id+":") }))
	}
	l.queue = newHandoff(l.listen, retryOr(d, time.Millisecond, 10*time.Millisecond), true)
	return l, nil
}

// listen subscribes to key's release channel on every master, each in the background (a master
// that is down must not hold up the waiter); ready closes when any of them is confirmed.
func (l *redlockLocker) listen(key string, ring func()) (<-chan struct{}, func()) {
	ready, quit := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	handles := make([]waitHandle, len(l.subs))
	// Every release is announced on every master, so a waiter subscribed on any one hears it; it
	// rings once for each release, not once per master (a resubscription, payload "", always
	// rings).
	var mu sync.Mutex
	var last string
	heard := func(_, payload string) {
		mu.Lock()
		again := payload != "" && payload == last
		last = payload
		mu.Unlock()
		if !again {
			ring()
		}
	}
	for i, s := range l.subs {
		wg.Go(func() {
			handles[i] = s.listen(context.Background(), redlockChannel(key), false, heard)
			select {
			case <-handles[i].ready:
				once.Do(func() { close(ready) })
			case <-quit:
			}
		})
	}
	stop := func() {
		close(quit)
		go func() {
			wg.Wait()
			for i, s := range l.subs {
				s.leave(handles[i])
			}
		}()
	}
	return ready, stop
}

// Close ends the subscriptions on the masters.
func (l *redlockLocker) Close() error {
	l.queue.close()
	var errs []error
	for _, s := range l.subs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

func (l *redlockLocker) Acquire(ctx context.Context, key string, opts Options) (heldLock, error) {
	a := &redlockAttempt{l: l, key: key, ttl: opts.Lease}
	// One Mutex per acquisition: it keeps the value and validity of this acquisition, so it is
	// never shared (redsync's Mutex is not safe to reuse across holders).
	a.m = l.rs.NewMutex(key, redsync.WithExpiry(a.ttl), redsync.WithTimeoutFactor(nodeTimeout(a.ttl).Seconds()/a.ttl.Seconds()),
		redsync.WithDriftFactor(l.drift), redsync.WithGenValueFunc(a.newValue))
	err := l.queue.obtain(ctx, key, "", opts.Wait, a.ttl, false, a.try)
	if errors.Is(err, ErrNotObtained) && a.attempts > 0 {
		err = l.notObtained(ctx, key, a.attempts, a.last)
	}
	if err != nil {
		return nil, err
	}
	le := newRedlockLease(ctx, l, a.m, key, a.ttl, a.token, !opts.ExplicitLease)
	l.mu.Lock()
	if l.local[key] == nil {
		l.local[key] = map[*redlockLease]struct{}{}
	}
	l.local[key][le] = struct{}{}
	l.mu.Unlock()
	return le, nil
}

// redlockAttempt is one acquisition across its attempts: its Mutex, the last attempt's value and
// error, how many were made, and the token of the one that won.
type redlockAttempt struct {
	l        *redlockLocker
	key      string
	ttl      time.Duration
	m        *redsync.Mutex
	value    string
	attempts int
	last     error
	token    int64
}

func (a *redlockAttempt) newValue() (string, error) {
	v, err := a.l.newValue()
	a.value = v
	return v, err
}

// try is one attempt: it and its clean-up release run to the end even if the caller goes away,
// so a partial win is always removed from the masters.
func (a *redlockAttempt) try(ctx context.Context) (bool, time.Duration, error) {
	l, key := a.l, a.key
	if ctx.Err() != nil {
		return false, 0, l.notObtained(ctx, key, a.attempts, a.last)
	}
	a.attempts++
	a.last = a.m.TryLockContext(context.WithoutCancel(ctx))
	if a.last != nil && noAnswer(a.last) {
		v := a.value
		orphaned(ctx, fmt.Errorf("%w: %w", ErrUnavailable, a.last), "redlock\x00"+key+"\x00"+v,
			func(ctx context.Context) error { return l.unlockValue(ctx, key, v) }, nil)
	}
	r := core.NewRedlock(l.quorum, l.fence)
	switch {
	case a.last != nil:
		r.Set(false, l.heldHere(key))
	case ctx.Err() != nil:
		// Won for a caller that has gone: give it back at once.
		l.giveBack(ctx, a.m, key, "release after cancelled acquire")
		return false, 0, l.notObtained(ctx, key, a.attempts, nil)
	default:
		r.Set(true, 0)
	}
	for !r.Over() {
		switch r.Round {
		case core.RedlockPTTL:
			r.PTTLs(l.pttls(ctx, key))
		case core.RedlockRead:
			r.Answered(l.fencing(ctx, nodeTimeout(a.ttl), script.RedlockTokenReadCall(key, a.m.Value())))
		case core.RedlockRaise:
			r.Answered(l.fencing(ctx, nodeTimeout(a.ttl), script.RedlockTokenRaiseCall(key, a.m.Value(), r.Token)))
		case core.RedlockUnfence:
			a.last = fmt.Errorf("redlock %s: not fenced on a quorum of %d masters: %w", key, l.quorum, errLost)
			l.giveBack(ctx, a.m, key, "release after a failed fencing round")
			r.GaveBack()
		}
	}
	a.token = r.Token
	return r.Round == core.RedlockHeld, r.Sleep, nil
}

// newValue is an acquisition's value on the masters: random, after the instance id when one was
// given (WithInstanceID), so a lock's value names the process that holds it.
func (l *redlockLocker) newValue() (string, error) {
	v := strings.ReplaceAll(uuid.NewString(), "-", "")
	if l.instance != "" {
		v = l.instance + ":" + v
	}
	return v, nil
}

// pttls reads key's PTTL on every master (core.NoAnswer where none came).
func (l *redlockLocker) pttls(ctx context.Context, key string) []time.Duration {
	// Not on the validity's clock: a slow answer only delays the sleep.
	return askMasters(ctx, l.masters, 250*time.Millisecond, core.NoAnswer, func(ctx context.Context, m redis.UniversalClient) (time.Duration, error) {
		return m.PTTL(ctx, key).Result()
	})
}

// giveBack releases a lock this acquisition has just won but will not keep, on every master and
// even if the caller has gone, and wakes the waiters.
func (l *redlockLocker) giveBack(ctx context.Context, m *redsync.Mutex, key, why string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := m.UnlockContext(uctx); err != nil {
		l.log.Warn("redlock: "+why, "key", key, "err", err)
	}
	l.released(key)
}

// noAnswer reports whether a master did not answer an attempt (a timeout, a broken connection),
// not a reply such as a lock taken.
func noAnswer(err error) bool {
	found := false
	walkErrors(err, func(e error) {
		var node *redsync.RedisError
		if errors.As(e, &node) && retryable(redisErr("", node.Err)) {
			found = true
		}
	})
	return found
}

// unlockValue deletes key on every master where it carries value (an unanswered attempt's: its
// give-back, orphan.go): ErrUnavailable while a master that could hold it did not answer.
func (l *redlockLocker) unlockValue(ctx context.Context, key, value string) error {
	ok, err := l.rs.NewMutex(key, redsync.WithValue(value)).UnlockContext(ctx)
	if ok || !noAnswer(err) {
		if ok {
			l.released(key)
		}
		return nil
	}
	return fmt.Errorf("lock: redlock give back %s: %w: %w", key, ErrUnavailable, err)
}

// heldHere is how long a lease of this process still holds key at the latest (its validity,
// moved on by every extension): 0 when none does. Its release rings the waiters sooner.
func (l *redlockLocker) heldHere(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var until time.Time
	for le := range l.local[key] {
		if u := le.life.until(); u.After(until) {
			until = u
		}
	}
	return max(time.Until(until), 0)
}

// forget drops a lease from the ones held here (released or lost).
func (l *redlockLocker) forget(le *redlockLease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.local[le.key], le)
	if len(l.local[le.key]) == 0 {
		delete(l.local, le.key)
	}
}

// released tells the waiters that key was given back: this process's queue at once, other
// processes through a PUBLISH on every master. A waiter is ready once its subscription on any
// one master is confirmed (a master that is down must not hold it up), so one message on one
// master would go unheard by a waiter whose subscription there was still on its way, and it
// would sleep out the holder's TTL. The PUBLISHes run in the background, each bounded by
// maxNodeTimeout, so a slow master never delays a release.
func (l *redlockLocker) released(key string) {
	l.queue.ring(key)
	payload := l.id + ":" + strconv.FormatUint(l.releases.Add(1), 10)
	for _, m := range l.masters {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), maxNodeTimeout)
			defer cancel()
			if err := m.Publish(ctx, redlockChannel(key), payload).Err(); err != nil {
				l.log.Debug("redlock: announce release", "key", key, "master", clientAddr(m), "err", err)
			}
		}()
	}
}

// maxNodeTimeout caps how long one attempt waits for a master. Redlock asks for a per-node
// timeout small against the ttl (5-50 ms for a 10 s ttl) so that a dead master cannot eat the
// validity; redsync's default is 5% of the ttl (1.5 s for the 30 s default lease), and a stopped
// master makes go-redis retry its dial (5 tries, 100 ms apart) until that runs out, so every
// acquisition with one master down would wait for it.
const maxNodeTimeout = 50 * time.Millisecond

// releaseTimeout bounds each send of a give-back: the deletes of a release on every master, a
// leave, a release sent again (core's give-back policy).
const releaseTimeout = core.ReleaseTimeout

// nodeTimeout is the per-master timeout of an attempt: redsync's 5% of the ttl, at most
// maxNodeTimeout.
func nodeTimeout(ttl time.Duration) time.Duration {
	return max(min(ttl/20, maxNodeTimeout), time.Millisecond)
}

// notObtained is the error of an acquisition that ran out of time: it names the last attempt's
// failure, joins ctx.Err() when the caller ended the wait, and also wraps ErrUnavailable when so
// many masters did not answer that no quorum could have been reached.
func (l *redlockLocker) notObtained(ctx context.Context, key string, attempts int, last error) error {
	err := fmt.Errorf("%w: %s: redlock, %d attempt(s) on %d masters (quorum %d)", ErrNotObtained, key, attempts, l.nodes, l.quorum)
	if down := failedNodes(last); len(down) > 0 && l.nodes-len(down) < l.quorum {
		err = fmt.Errorf("%w: %d of %d masters did not answer (%s): %w", err, len(down), l.nodes, l.names(down), ErrUnavailable)
	}
	if last != nil {
		err = fmt.Errorf("%w: %w", err, last)
	}
	if cerr := ctx.Err(); cerr != nil {
		err = fmt.Errorf("%w: %w", err, cerr)
	}
	return err
}

// names lists masters by number (from 1, as in the configuration) and address.
func (l *redlockLocker) names(nodes map[int]bool) string {
	var out []string
	for i, m := range l.masters {
		if nodes[i] {
			out = append(out, fmt.Sprintf("master %d %s", i+1, clientAddr(m)))
		}
	}
	return strings.Join(out, ", ")
}

// failedNodes lists the masters that failed to answer in a redsync error (its errors are
// errors.Join trees of *RedisError, *ErrNodeTaken and ErrLockAlreadyExpired).
func failedNodes(err error) map[int]bool {
	nodes := map[int]bool{}
	walkErrors(err, func(e error) {
		var re *redsync.RedisError
		if errors.As(e, &re) {
			nodes[re.Node] = true
		}
	})
	return nodes
}

// walkErrors calls fn for err and every error it wraps, following joined errors.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	}
}

// redlockLease is one held Redlock. Lost is closed by the watchdog when an extension fails, or by
// the validity timer when the validity computed at the last successful acquire/extend runs out.
type redlockLease struct {
	key   string
	token int64      // 0 unless fenced
	mmu   sync.Mutex // the watchdog and Refresh both extend m
	m     *redsync.Mutex
	l     *redlockLocker
	rs    *redsync.Redsync
	log   *slog.Logger

	// life closes Lost when the validity ends before an extension moved it, or a watchdog's
	// extension is refused; it renews every ttl/3 unless the lease is explicit.
	life  *life // &own
	own   life
	watch bool
	gate  releaseGate
}

func newRedlockLease(ctx context.Context, rl *redlockLocker, m *redsync.Mutex, key string, ttl time.Duration, token int64, renew bool) *redlockLease {
	l := &redlockLease{key: key, m: m, l: rl, log: rl.log, rs: rl.rs, token: token, watch: renew}
	// The validity redsync computed is the lease's end: its drift, not the library's margin.
	// With renew, it is extended at a third of the ttl, as Redisson's watchdog does: two more
	// chances before the validity (ttl - elapsed - drift) runs out. A failed extension is tried
	// again while the validity lasts.
	until := m.Until().Add(core.Margin(ttl))
	l.life = &l.own
	// Set before the life starts: its timer's first round reads it.
	l.own.endOf = func(time.Time) time.Time {
		l.mmu.Lock()
		defer l.mmu.Unlock()
		return l.m.Until()
	}
	l.own.start(ctx, ttl, ttl, until, l, renew, renew, true)
	return l
}

// keep is a round of the watchdog (keeper): an extension.
func (l *redlockLease) keep(ctx context.Context) (renewOutcome, error) { return l.extend(ctx) }

// lost logs why the lease was lost and forgets it (keeper).
func (l *redlockLease) lost(why error) {
	l.log.Warn("redlock lost while held", "key", l.key, "err", why)
	l.l.forget(l)
}

// extend runs on the watchdog's round, the only one that touches the Mutex while held but
// Refresh. A failed extension is retried by the watchdog while the validity lasts.
func (l *redlockLease) extend(ctx context.Context) (renewOutcome, error) {
	if err := l.extendQuorum(ctx); err != nil {
		return renewFailed, err
	}
	return renewed, nil
}

// refresh extends the lock on a quorum of masters and moves the validity with it.
func (l *redlockLease) refresh(ctx context.Context) error {
	if err := l.extendQuorum(ctx); err != nil {
		return err
	}
	l.mmu.Lock()
	until := l.m.Until()
	l.mmu.Unlock()
	l.life.refreshedUntil(until)
	return nil
}

// extendQuorum extends the lock on a quorum of masters.
func (l *redlockLease) extendQuorum(ctx context.Context) error {
	if l.gate.released() {
		return fmt.Errorf("%w: redlock %s: this lease was released", ErrNotHeld, l.key)
	}
	l.mmu.Lock()
	defer l.mmu.Unlock()
	ok, err := l.m.ExtendContext(ctx)
	if err != nil || !ok {
		return fmt.Errorf("lock: redlock extend %s on a quorum of masters: %w", l.key, errors.Join(err, ErrNotHeld))
	}
	return nil
}

// stop ends renewal and the validity (a release).
func (l *redlockLease) stop() { l.life.Stop() }

func (l *redlockLease) Key() string           { return l.key }
func (l *redlockLease) Token() int64          { return l.token }
func (l *redlockLease) Lost() <-chan struct{} { return l.life.Lost() }

// Renewals counts the successful extensions on a quorum of masters.
func (l *redlockLease) Renewals() int64 { return l.life.Renewals() }

// releaseAfter deletes the lock on every master where it still carries this acquisition's value.
// It succeeds when a quorum did; when the lock had already expired or was taken by another
// holder on some master it is ErrNotHeld, when the masters did not answer, ErrUnavailable.
// The holder's pipeline p (nil: none) is executed first.
func (l *redlockLease) releaseAfter(ctx context.Context, p redis.Pipeliner) error {
	return l.gate.release(ctx, p, l.key, func() {
		l.stop()
		l.l.forget(l)
	}, func() error {
		execHeld(ctx, p)
		return l.unlock(ctx)
	})
}

// unlock sends the deletes (again, after the masters did not answer).
func (l *redlockLease) unlock(ctx context.Context) error {
	// The release returns as soon as a quorum has deleted (fail-fast), so a dead or slow master
	// does not hold up the holder; the deletes still under way finish in the background within
	// releaseTimeout (the context is not cancelled when Release returns), and where one does not
	// arrive the key lives out its ttl. A compare-and-delete that lands late cannot hurt a new
	// holder: it only deletes this acquisition's value.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	time.AfterFunc(releaseTimeout, cancel)
	rel := l.rs.NewMutex(l.key, redsync.WithValue(l.m.Value()), redsync.WithFailFast(true))
	ok, err := rel.UnlockContext(ctx)
	// Whatever the outcome, the lock may be free now: wake the waiters.
	l.l.released(l.key)
	if ok {
		return nil
	}
	notOurs := false
	walkErrors(err, func(e error) {
		var taken *redsync.ErrTaken
		var nodeTaken *redsync.ErrNodeTaken
		if errors.Is(e, redsync.ErrLockAlreadyExpired) || errors.As(e, &taken) || errors.As(e, &nodeTaken) {
			notOurs = true
		}
	})
	if notOurs {
		return fmt.Errorf("%w: redlock %s: no longer ours on a quorum of masters: %w", ErrNotHeld, l.key, err)
	}
	// The masters did not answer: the gate lets the lease be released again.
	return fmt.Errorf("lock: redlock release %s: %w: %w", l.key, ErrUnavailable, err)
}
