package lock

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// waitLine is how modes lua and fenced wait: in this process in the key's queue (handoff.go, the
// queue every kind but fair waits in), whose head alone goes to Redis, and across processes in
// the line in Redis (script/lua/line.lua), from which a release hands the lock to one waiter,
// whichever process it is in, by writing that waiter's value into the lock. This file keeps what
// the hand-over adds to the queue: a waiter told it holds the lock does not try, a waiter the
// release put in the Redis line waits for its grant, and a release passes this process's next
// waiter on itself (the cohort). Its rules of waiting, beside waiting.go's:
//
//   - L1. Two lines. In each process a key's waiters wait in arrival order and only the head goes
//     to Redis (rule 3). In Redis the heads of the processes wait in one line per key, with each
//     one's deadline and the TTL a lock handed to it gets, in the order they first failed.
//     Reentrant's processes wait in the same line (N1). Checked by
//     TestLineOneReleaseWakesOneWaiter/<mode>.
//   - L2. A release hands the lock to the first live waiter in the Redis line. It writes that
//     waiter's value into the lock (fenced: with a new token) and publishes on that waiter's
//     process's grant channel alone, or tells it directly when it is in the releasing process.
//     The releasing process's next waiter joins the Redis line in the same script. With nobody in
//     the Redis line the lock goes to that next waiter; with nobody at all it is deleted. Checked
//     by TestLineOneReleaseWakesOneWaiter/<mode>, TestLineHandsOverWithinOneProcess/<mode> and
//     TestLineWaiterArrivingDuringARelease/<mode>.
//   - L3. The cohort. A release may hand the lock to its own process's next waiter while the
//     Redis line waits, at most core.Cohort holders of one process in a row. Checked by
//     TestLineSharesTurnsAcrossProcesses/cohort-<k>.
//   - L4. A lock handed to a waiter lives min(its lease, its wait, core.MaxGrantTTL) at first. A
//     live holder pushes it out to its lease a third of the way in, by the lease's life
//     (core.Life): a push that fails closes Lost within the grant TTL. Checked by
//     TestLineHandedOverLockGetsItsLease/<mode> and TestLineHandedOverWatchedLeaseLost.
//   - L5. A waiter is queued in Redis only once its process's grant subscription is confirmed;
//     until then its head tries without queueing every core.UnsubscribedPoll. A queued head looks
//     again at least every core.LostGrantBound, so a grant lost with a broken subscription costs
//     that much. Checked by TestConformance/<kind>/9-wake-without-polling (from above only).
//   - L6. The line is this library's own: the lock is a string its scripts write, so no Redisson
//     client takes part (a Java RFencedLock on the same name gets WRONGTYPE while it is held
//     here). Not checked by a test.
type waitLine struct {
	rdb    redis.UniversalClient
	log    *slog.Logger
	fenced bool
	// lostGrant is core.LostGrantBound and maxGrant core.MaxGrantTTL (a test that counts commands raises
	// both: a head queued in Redis looks again within either).
	lostGrant, maxGrant time.Duration
	// id names this process in its waiters' values ("<id>:<n>") and its grant channel; mine
	// is id + ":", the start of this process's values.
	id      string
	mine    string
	seq     atomic.Uint64 // numbers this Locker's values (newValue)
	channel string        // grantChannelPrefix + id
	// args are the scripts' constant arguments, boxed once: the fenced flag and mine.
	fencedArg, mineArg any
	// keys are the scripts' keys of the key last used (a process sells one key at a time, most
	// often), kept so that a busy sale does not build them on every command.
	keys atomic.Pointer[lineKeySet]
	ms   atomic.Pointer[msBoxes] // boxMs's
	// queue is the in-process queue of each key; a waiter's place is named by its value.
	queue *handoff
	// sub is the Locker's pub/sub connection (pubsub.go), on which the grant channel is
	// subscribed once, on the first wait, for the Locker's life.
	sub        *subscriber
	subscribed sync.Once

	mu sync.Mutex
	// line decides (lock/core): this process's waiters, the holder of each key here and the
	// cohort's turns.
	line  core.Line
	ready <-chan struct{} // closed once the grant channel's subscription is confirmed
}

// idUnsafe makes an instance id safe inside a line id.
var idUnsafe = strings.NewReplacer(":", "_", "\n", "_", " ", "_", "\t", "_", "\r", "_")

// grantChannelPrefix starts every process's grant channel.
const grantChannelPrefix = script.GrantChannelPrefix

// lineKeySet is the keys of one lock's scripts, and its two scripts on them.
type lineKeySet struct {
	key              string
	keys             []string
	acquire, release scriptCall
}

// scriptKeys are the keys of this line's scripts (script.LineKeys): the line and the token
// counter (the lock key again for lua). The slice is shared: the caller does not change it.
func (wl *waitLine) scriptKeys(key string) []string { return wl.keySet(key).keys }

// keySet is key's lineKeySet, kept for the key last used (a process sells one key at a time, most
// often), so a busy sale does not build it on every command.
func (wl *waitLine) keySet(key string) *lineKeySet {
	if k := wl.keys.Load(); k != nil && k.key == key {
		return k
	}
	tok := key
	if wl.fenced {
		tok = fencedTokenKey(wl.rdb, key)
	}
	keys := script.LineKeys(key, tok)
	k := &lineKeySet{key: key, keys: keys, acquire: newScriptCall(classic("LineAcquire"), keys), release: newScriptCall(classic("LineRelease"), keys)}
	wl.keys.Store(k)
	return k
}

// newWaitLine builds a Locker's line; instance (WithInstanceID) starts its id, so a lock's value
// names the process that holds it (with ':' and white space, which the scripts split on, made '_').
func newWaitLine(rdb redis.UniversalClient, log *slog.Logger, fenced bool, instance string) *waitLine {
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	if instance != "" {
		id = idUnsafe.Replace(instance) + "." + id
	}
	everything := func(string) bool { return true } // every payload on the grant channel is a grant
	wl := &waitLine{rdb: rdb, log: log, fenced: fenced, lostGrant: core.LostGrantBound, maxGrant: core.MaxGrantTTL,
		id: id, mine: id + ":", channel: grantChannelPrefix + id, sub: newSubscriber(rdb, log, nil, everything), line: core.NewLine(core.Cohort)}
	wl.fencedArg, wl.mineArg = script.Flag(fenced), wl.mine
	// The grant channel is the process's, not the key's: a queue joins it, and is rung by deliver.
	// A release here rings its key's queue itself (release, forget).
	wl.queue = newHandoff(func(string, func()) (<-chan struct{}, func()) { return wl.subscribe(), func() {} }, nil, true)
	return wl
}

// newValue is the value of a new acquisition: it names this process, so a release elsewhere
// knows where to send its grant.
func (wl *waitLine) newValue() string {
	// id is random per Locker, and the sequence number unique within it: a value is never reused.
	var buf [96]byte
	return string(strconv.AppendUint(append(buf[:0], wl.mine...), wl.seq.Add(1), 10))
}

// subscribe starts listening on this process's grant channel (once), and returns a channel that
// closes when Redis has confirmed it.
func (wl *waitLine) subscribe() <-chan struct{} {
	wl.subscribed.Do(func() {
		// Not under wl.mu: the subscriber calls heard with its own lock held, and heard takes wl.mu.
		h := wl.sub.listen(context.Background(), wl.channel, false, func(_, payload string) {
			if payload == "" {
				// Confirmed again: the connection broke and came back, and grants published
				// meanwhile went unheard (a restarted Redis has lost its line too), so every
				// head looks again now rather than at its next timer.
				wl.lookAgain()
				return
			}
			wl.heard(payload)
		})
		wl.mu.Lock()
		wl.ready = h.ready
		wl.mu.Unlock()
	})
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return wl.ready
}

// subscribing reports whether the grant channel's subscription has been sent (subscribe returns
// at once from then on).
func (wl *waitLine) subscribing() bool {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return wl.ready != nil
}

// lookAgain makes the head of every key's queue in this process try again at once.
func (wl *waitLine) lookAgain() {
	wl.mu.Lock()
	wl.line.LookAgain()
	wl.mu.Unlock()
	wl.queue.ringAll()
}

// heard handles a grant message "<lock>\n<value>\n<token>" from a release in another process.
func (wl *waitLine) heard(payload string) {
	parts := strings.SplitN(payload, "\n", 3)
	if len(parts) != 3 {
		return
	}
	tok, _ := strconv.ParseInt(parts[2], 10, 64)
	if !wl.deliver(parts[0], parts[1], tok, true, time.Time{}) {
		go wl.passOn(parts[0], parts[1])
	}
}

// deliver gives the lock to this process's waiter with value (short: with its grant TTL, not its
// lease), handed over by a release sent at since (zero: not known here); false when no such waiter
// waits (and the value is not held here either): nobody has the lock that was handed to it.
func (wl *waitLine) deliver(key, value string, token int64, short bool, since time.Time) bool {
	wl.mu.Lock()
	ring, passOn := wl.line.Granted(key, value, token, short, since)
	wl.mu.Unlock()
	if ring {
		wl.queue.ring(key) // it is the head: only a head is in the Redis line, or passed on by a release
	}
	return !passOn
}

// passOn hands on a lock that was handed to a waiter that had left (waiting.go rule 7).
func (wl *waitLine) passOn(key, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if _, err := wl.release(ctx, nil, key, value); err != nil {
		wl.log.Warn("lock line: pass on a lock handed to a waiter that left", "key", key, "err", err)
	}
}

// acquire waits until value holds key's lock, the wait runs out (ErrNotObtained) or ctx ends. It
// returns the lock's fencing token (0 for lua) and its tenure: the TTL it has (less than the lease
// when handed over short) from when it was taken or handed over.
func (wl *waitLine) acquire(ctx context.Context, key, value string, lease, wait time.Duration) (int64, tenure, error) {
	win, err := wl.wait(ctx, key, value, lease, wait)
	if err != nil {
		return 0, tenure{}, err
	}
	ttl := lease
	if win.Short && win.GrantTTL < lease {
		ttl = win.GrantTTL
	}
	return win.Token, tenure{ttl: ttl, until: win.Since.Add(ttl)}, nil
}

// lineWin is how a waiter got the lock (core.LineWin).
type lineWin = core.LineWin

// wait waits in key's queue and line until value holds the lock, the wait runs out or ctx ends.
func (wl *waitLine) wait(ctx context.Context, key, value string, lease, wait time.Duration) (lineWin, error) {
	leaseMs := strconv.FormatInt(max(lease.Milliseconds(), 1), 10)
	if wait <= 0 {
		return wl.once(ctx, key, value, lease, leaseMs)
	}
	ready := wl.subscribe()
	now := time.Now()
	wl.mu.Lock()
	wl.line.Enter(now, key, value, lease, core.GrantTTL(lease, wait, wl.maxGrant), now.Add(wait))
	wl.mu.Unlock()
	var win lineWin
	err := wl.queue.obtain(ctx, key, value, wait, lease, false, func(ctx context.Context) (held bool, next time.Duration, err error) {
		win, held, next, err = wl.attempt(ctx, key, value, leaseMs, isDone(ready))
		return held, next, err
	})
	wl.exit(ctx, key, value, err == nil, now.Add(wait))
	return win, err
}

// once is a single attempt that does not queue (no wait).
func (wl *waitLine) once(ctx context.Context, key, value string, lease time.Duration, leaseMs string) (lineWin, error) {
	win := lineWin{Since: time.Now()}
	held, tok, _, err := wl.try(ctx, key, value, leaseMs, 0, 0)
	switch {
	case err != nil:
		return win, obtainErr(ctx, key, err)
	case !held:
		return win, notObtained(ctx, key)
	}
	wl.mu.Lock()
	wl.line.Hold(key, value, win.Since.Add(lease))
	wl.mu.Unlock()
	win.Token = tok
	return win, nil
}

// attempt is the head's turn: a lock handed to it is taken without a word to Redis, and so is
// the wait for a grant a release queued it for; else it runs the acquire script. A grant
// published before this process's subscription is confirmed would be lost (and found only by the
// waiter's next attempt), so until then the head tries without queueing, every few milliseconds,
// as a poll would. It returns the win, or how long until it is worth looking again.
func (wl *waitLine) attempt(ctx context.Context, key, value, leaseMs string, subscribed bool) (lineWin, bool, time.Duration, error) {
	sent := time.Now()
	wl.mu.Lock()
	look := wl.line.Look(sent, value, subscribed)
	wl.mu.Unlock()
	switch {
	case look.Won:
		return look.Win, true, 0, nil
	case look.Wait > 0:
		return lineWin{}, false, look.Wait, nil
	}
	var queueUntil int64
	if !look.QueueUntil.IsZero() {
		queueUntil = look.QueueUntil.UnixMilli()
	}
	held, tok, ms, err := wl.try(ctx, key, value, leaseMs, queueUntil, look.GrantTTL.Milliseconds())
	if err != nil && neverSent(err) {
		wl.mu.Lock()
		wl.line.Unsent(value)
		wl.mu.Unlock()
	}
	if err != nil || held {
		return lineWin{Token: tok, Since: sent}, held, 0, err
	}
	wl.mu.Lock()
	d := wl.line.Tried(time.Now(), value, time.Duration(ms)*time.Millisecond, wl.lostGrant, subscribed)
	wl.mu.Unlock()
	return lineWin{}, false, d, nil
}

// try is one run of the acquire script: held and the token, or how long until it is worth
// looking again (ms). deadline 0: a single attempt that does not queue.
func (wl *waitLine) try(ctx context.Context, key, value, leaseMs string, deadline, grantMs int64) (bool, int64, int64, error) {
	call := wl.keySet(key).acquire
	r, err := offload(ctx, func() ([]any, error) {
		return call.run(ctx, nil, wl.rdb, script.LineAcquireArgs(call.args(6), value, time.Now().UnixMilli(), wl.fencedArg,
			leaseMs, deadline, grantMs)).Slice()
	})
	if err != nil {
		err = redisErr("acquire "+key, err)
		orphaned(ctx, err, "line\x00"+key+"\x00"+value, func(ctx context.Context) error {
			_, err := wl.release(ctx, nil, key, value) // out of the Redis line, the lock passed on
			return err
		}, nil)
		return false, 0, 0, err
	}
	held, n, ok := script.LineAcquired(r)
	switch {
	case !ok:
		return false, 0, 0, fmt.Errorf("lock: acquire %s: unexpected reply %v", key, r)
	case held:
		return true, n, 0, nil
	}
	return false, 0, n, nil
}

// exit ends value's wait. With the lock (won) the value is held from now on. Without it: a lock
// handed to it that it did not take is passed on, else its entry in the Redis line is removed
// (waiting.go rule 7). ctx is the acquisition's: its first leave is offloaded.
func (wl *waitLine) exit(ctx context.Context, key, value string, won bool, deadline time.Time) {
	wl.mu.Lock()
	passOn, leave := wl.line.Exit(time.Now(), key, value, won)
	wl.mu.Unlock()
	switch {
	case passOn:
		go wl.passOn(key, value)
		return
	case !leave:
		return
	}
	// An entry left behind would hold the Redis line up until its deadline (waiting.go rule 7),
	// the next waiter of this process too, which rides with a new value after a master down. So
	// a leave that could not reach Redis (a connection broken by a restart, a master down) is
	// sent again, in the background, until that deadline (a releaseTimeout at least): the waiter
	// returns at once.
	within := max(time.Until(deadline), releaseTimeout)
	giveBackOnce(ctx, context.Background(), wl.log, "lock line: leave the line", key, "", within, func(ctx context.Context) error {
		_, err := wl.release(ctx, nil, key, value)
		return err
	})
}

// forget ends a hold of value in this process: its key's head may try now.
func (wl *waitLine) forget(key, value string) {
	wl.mu.Lock()
	was := wl.line.Forget(key, value)
	wl.mu.Unlock()
	if was {
		wl.queue.ring(key)
	}
}

// release gives back key's lock held by value and passes it on (rules L2 and L3),
// after the holder's pipeline p when there is one (runScript); when the lock is not value's, it
// only takes value out of the Redis line. It reports whether the lock was value's.
func (wl *waitLine) release(ctx context.Context, p redis.Pipeliner, key, value string) (bool, error) {
	next, ok := wl.nextWaiter(key, value)
	call := wl.keySet(key).release
	sent := time.Now()
	var after script.LineNext
	if ok {
		after = script.LineNext{Value: next.Value, Deadline: next.Deadline.UnixMilli(), Before: next.Before}
		after.Grant, after.Lease = wl.boxMs(next.GrantTTL.Milliseconds(), max(next.Lease.Milliseconds(), 1))
	}
	args := script.LineReleaseArgs(call.args(10), value, sent.UnixMilli(), wl.fencedArg, wl.mineArg, after)
	r, err := call.run(ctx, p, wl.rdb, args).Slice()
	if err != nil {
		wl.forget(key, value)
		return false, redisErr("release "+key, err)
	}
	got, ok := script.ReadLineRelease(r)
	if !ok || got.Code < 2 {
		wl.forget(key, value)
		return got.Code == 1, nil
	}
	wl.mu.Lock()
	wl.line.Released(time.Now(), key, value, got.Cohort, next.Value, got.To)
	wl.mu.Unlock()
	if strings.HasPrefix(got.To, wl.mine) && !wl.deliver(key, got.To, got.Token, got.Code == 2, sent) {
		go wl.passOn(key, got.To)
	}
	// The head looks at what the release did: a waiter that became the head while the script
	// ran, or the next waiter queued behind, learns it without a word to Redis.
	wl.queue.ring(key)
	return true, nil
}

// msBoxes are a next waiter's grant TTL and lease in milliseconds, boxed as a script's arguments.
type msBoxes struct {
	grant, lease int64
	boxed        [2]any
}

// boxMs boxes grant and lease as arguments, once while they repeat (a Locker's waiters most often
// share both): boxing each on every release is two allocations a sale.
func (wl *waitLine) boxMs(grant, lease int64) (any, any) {
	b := wl.ms.Load()
	if b == nil || b.grant != grant || b.lease != lease {
		b = &msBoxes{grant: grant, lease: lease, boxed: [2]any{grant, lease}}
		wl.ms.Store(b)
	}
	return b.boxed[0], b.boxed[1]
}

// nextWaiter is what a release of value passes on to this process's next waiter: the head of
// key's queue, when the release is a holder's here and the head is not in the Redis line yet, and
// whether it may have the lock before the Redis line (rule L3).
func (wl *waitLine) nextWaiter(key, value string) (core.LineNext, bool) {
	head, ok := wl.queue.headOf(key)
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return wl.line.Next(key, value, head, ok, wl.ready != nil && isDone(wl.ready))
}

// close ends the grant subscription. Waiters still waiting fall back to their timers.
func (wl *waitLine) close() error { return wl.sub.Close() }
