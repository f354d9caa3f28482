package lock

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
)

var (
	lineAcquire = redis.NewScript(script.LineAcquire)
	lineRelease = redis.NewScript(script.LineRelease)
)

// waitLine is the waiter line of modes lua and fenced, across processes: one release wakes one
// waiter, whichever process it is in. The rules of waiting are in waiting.go: rules 13–17 apply
// here (with 3, 6, 7, 9–11 and 18–23).
type waitLine struct {
	rdb    redis.UniversalClient
	log    *slog.Logger
	fenced bool
	// cohort is the constant cohort (waiting.go rule 15); a test sets others.
	cohort int
	// lostGrant is lostGrantBound and maxGrant maxGrantTTL (a test that counts commands raises
	// both: a head queued in Redis looks again within either).
	lostGrant, maxGrant time.Duration
	// id names this process in its waiters' values ("<id>:<uuid>") and its grant channel.
	id      string
	channel string // grantChannelPrefix + id

	// sub is the Locker's pub/sub connection (pubsub.go), on which the grant channel is
	// subscribed once, on the first wait, for the Locker's life.
	sub        *subscriber
	subscribed sync.Once

	mu   sync.Mutex
	keys map[string]*keyLine
	// held are the values this process holds, from the moment a waiter got the lock until its
	// release has run, so a late grant message for one of them is not taken for an orphan.
	held  map[string]bool
	ready <-chan struct{} // closed once the grant channel's subscription is confirmed
}

// idUnsafe makes an instance id safe inside a line id.
var idUnsafe = strings.NewReplacer(":", "_", "\n", "_", " ", "_", "\t", "_", "\r", "_")

// grantChannelPrefix starts every process's grant channel.
const grantChannelPrefix = script.GrantChannelPrefix

// lineKeys are a lock and its line in Redis (script/lua/line.lua), the one line of lua, fenced
// and reentrant, in the same hash slot as the lock (as Redisson's prefixName keeps them).
func lineKeys(key string) []string {
	return []string{key, script.Prefixed(script.LinePrefix, key), script.Prefixed(script.LineWaitersPrefix, key)}
}

// scriptKeys are the keys of this line's scripts: lineKeys and the token counter (the lock key
// again for lua).
func (wl *waitLine) scriptKeys(key string) []string {
	tok := key
	if wl.fenced {
		tok = fencedTokenKey(wl.rdb, key)
	}
	return append(lineKeys(key), tok)
}

// keyLine is one key's waiters in this process. Fields are guarded by waitLine.mu.
type keyLine struct {
	fifo fifo[*lineWaiter] // the waiters, in arrival order; the head is the only one that tries in Redis
	// holder is the value of a holder in this process: its release will hand the lock on, or put
	// the head in the Redis line, so the head need not try before that or holderUntil.
	holder      string
	holderUntil time.Time
	// turns counts the releases in a row here that handed the lock to this process's next
	// waiter before the Redis line (waiting.go rule 15; the script does not look whether anyone
	// waits in it, so the count is reset only by a release that does).
	turns int
}

// lineWaiter is one waiter. Fields other than the first four are guarded by waitLine.mu.
type lineWaiter struct {
	value    string
	lease    time.Duration
	grantTTL time.Duration // min(lease, wait): how long a lock handed to it lives unrenewed
	deadline time.Time
	bell     chan struct{} // capacity 1: its turn, a release here, a grant

	granted bool
	token   int64
	// short: the lock was handed over with grantTTL, less than the lease (waiting.go rule 16).
	short bool
	// next is when the head tries again at the latest (after a failed attempt: the lock's PTTL).
	next time.Time
	// sent is when its last attempt was sent (its creation before any); since, when the release
	// that handed it the lock was sent (a grant from another process: its last attempt, which
	// put it in the Redis line before the grant).
	sent, since time.Time
}

// becameHead wakes the waiter to try: the head before it has left (a waiter that enters an
// empty line tries at once without it).
func (w *lineWaiter) becameHead() { w.ring() }

func (w *lineWaiter) ring() {
	select {
	case w.bell <- struct{}{}:
	default:
	}
}

// newWaitLine builds a Locker's line; instance (WithInstanceID) starts its id, so a lock's value
// names the process that holds it (with ':' and white space, which the scripts split on, made '_').
func newWaitLine(rdb redis.UniversalClient, log *slog.Logger, fenced bool, instance string) *waitLine {
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	if instance != "" {
		id = idUnsafe.Replace(instance) + "." + id
	}
	everything := func(string) bool { return true } // every payload on the grant channel is a grant
	return &waitLine{rdb: rdb, log: log, fenced: fenced, cohort: cohort, lostGrant: lostGrantBound, maxGrant: maxGrantTTL, id: id, channel: grantChannelPrefix + id,
		sub: newSubscriber(rdb, log, everything), keys: map[string]*keyLine{}, held: map[string]bool{}}
}

// newValue is the value of a new acquisition: it names this process, so a release elsewhere
// knows where to send its grant.
func (wl *waitLine) newValue() string { return wl.id + ":" + uuid.NewString() }

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

// lookAgain makes the head of every key's line in this process try again at once.
func (wl *waitLine) lookAgain() {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for _, kl := range wl.keys {
		if head, ok := kl.fifo.head(); ok {
			head.next = time.Time{}
			head.ring()
		}
	}
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
	defer wl.mu.Unlock()
	if wl.held[value] {
		return true // taken already by its own attempt
	}
	if kl := wl.keys[key]; kl != nil {
		for _, w := range kl.fifo.waiters {
			if w.value == value {
				if !w.granted {
					w.granted, w.token, w.short = true, token, short
					w.since = since
					if since.IsZero() {
						w.since = w.sent
					}
					kl.holder, kl.holderUntil = value, time.Now().Add(w.lease)
					w.ring()
				}
				return true
			}
		}
	}
	return false
}

// passOn hands on a lock that was handed to a waiter that had left (waiting.go rule 21).
func (wl *waitLine) passOn(key, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if _, err := wl.release(ctx, nil, key, value); err != nil {
		wl.log.Warn("lock line: pass on a lock handed to a waiter that left", "key", key, "err", err)
	}
}

// lineHold is what the line gives a new holder: its fencing token (0 for lua), when its lock runs
// out by our clock, and the push of a lock handed over with less than its lease (waiting.go
// rule 16).
type lineHold struct {
	token int64
	until time.Time
	// stop stops the push (nil: nothing to push).
	stop func()

	mu sync.Mutex
	// moved is told the new expiry each push sets (Lease.Lost follows it).
	moved func(time.Time)
}

func (h *lineHold) expiresAt() time.Time { return h.until }

func (h *lineHold) onExtend(f func(time.Time)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.moved = f
}

// acquire waits until value holds key's lock, the wait runs out (ErrNotObtained) or ctx ends.
func (wl *waitLine) acquire(ctx context.Context, key, value string, lease, wait time.Duration) (*lineHold, error) {
	win, err := wl.wait(ctx, key, value, lease, wait)
	if err != nil {
		return nil, err
	}
	h := &lineHold{token: win.token, until: win.since.Add(lease)}
	grantTTL := win.grantTTL
	if !win.short || grantTTL >= lease {
		return h, nil
	}
	h.until = win.since.Add(grantTTL)
	// waiting.go rule 16: a live holder keeps the lease it asked for. Not at once: most holds end
	// long before, and their release makes the push needless.
	base := context.WithoutCancel(ctx)
	t := time.AfterFunc(grantTTL/3, func() {
		sent := time.Now()
		if wl.extend(base, key, value, lease) {
			h.mu.Lock()
			moved := h.moved
			h.mu.Unlock()
			if moved != nil {
				moved(sent.Add(lease))
			}
		}
	})
	h.stop = func() { t.Stop() }
	return h, nil
}

// lineWin is how a waiter got the lock: its token, whether it came handed over with its grant
// TTL (short), that TTL, and when the command that took it (or the release that handed it over)
// was sent.
type lineWin struct {
	token    int64
	short    bool
	grantTTL time.Duration
	since    time.Time
}

// wait waits in key's line until value holds the lock, the wait runs out or ctx ends.
func (wl *waitLine) wait(ctx context.Context, key, value string, lease, wait time.Duration) (lineWin, error) {
	leaseMs := strconv.FormatInt(max(lease.Milliseconds(), 1), 10)
	if wait <= 0 {
		return wl.once(ctx, key, value, leaseMs)
	}
	ready := wl.subscribe()
	w := &lineWaiter{value: value, lease: lease, grantTTL: max(min(lease, wait, wl.maxGrant), time.Millisecond),
		deadline: time.Now().Add(wait), bell: make(chan struct{}, 1), sent: time.Now()}
	kl := wl.enter(key, w)
	won := false
	var retry brokenRetry
	defer func() { wl.exit(key, kl, w, won) }()
	for {
		subscribed := isDone(ready)
		now := time.Now()
		win, granted, tryNow, wake := wl.next(kl, w, now)
		switch {
		case granted:
			won = true
			return win, nil
		case tryNow:
			win, held, err := wl.attempt(ctx, key, value, leaseMs, w, subscribed)
			if err != nil {
				if retry.again(ctx, err, w.deadline) {
					continue
				}
				return win, obtainErr(ctx, key, err)
			}
			retry.answered()
			if held {
				won = true
				return win, nil
			}
		case !now.Before(w.deadline) || ctx.Err() != nil:
			return lineWin{}, notObtained(ctx, key)
		default:
			wl.sleep(ctx, w, wake, ready, subscribed)
		}
	}
}

// once is a single attempt that does not queue (no wait).
func (wl *waitLine) once(ctx context.Context, key, value, leaseMs string) (lineWin, error) {
	win := lineWin{since: time.Now()}
	held, tok, _, err := wl.try(ctx, key, value, leaseMs, 0, 0)
	switch {
	case err != nil:
		return win, obtainErr(ctx, key, err)
	case !held:
		return win, notObtained(ctx, key)
	}
	wl.mu.Lock()
	wl.held[value] = true
	wl.mu.Unlock()
	win.token = tok
	return win, nil
}

// next says, under the line's lock, what w does now: it was handed the lock (granted, with win),
// it is the head and its next attempt is due (tryNow), or it sleeps until wake: the end of its
// wait, the end of a hold in this process, or its next attempt.
func (wl *waitLine) next(kl *keyLine, w *lineWaiter, now time.Time) (win lineWin, granted, tryNow bool, wake time.Time) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	if w.granted {
		return lineWin{token: w.token, short: w.short, grantTTL: w.grantTTL, since: w.since}, true, false, time.Time{}
	}
	wake = w.deadline
	switch {
	case !kl.fifo.isHead(w):
	case kl.holder != "" && now.Before(kl.holderUntil):
		wake = minTime(wake, kl.holderUntil)
	case !now.Before(w.next):
		tryNow = true
	default:
		wake = minTime(wake, w.next)
	}
	return win, false, tryNow, wake
}

// attempt is the head's try. A grant published before this process's subscription is confirmed
// would be lost (and found only by the waiter's next attempt), so until then the head tries
// without queueing, every few milliseconds, as a poll would. A failed attempt sets when to look
// again.
func (wl *waitLine) attempt(ctx context.Context, key, value, leaseMs string, w *lineWaiter, subscribed bool) (lineWin, bool, error) {
	queueUntil := w.deadline.UnixMilli()
	if !subscribed {
		queueUntil = 0
	}
	sent := time.Now()
	wl.mu.Lock()
	w.sent = sent
	wl.mu.Unlock()
	held, tok, ms, err := wl.try(ctx, key, value, leaseMs, queueUntil, w.grantTTL.Milliseconds())
	if err != nil || held {
		return lineWin{token: tok, since: sent}, held, err
	}
	d := time.Duration(ms) * time.Millisecond
	if d < 0 {
		d = w.grantTTL // a lock without a TTL: not one of this mode's
	}
	if !subscribed {
		d = min(d, unsubscribedPoll)
	}
	wl.mu.Lock()
	w.next = time.Now().Add(max(min(d, w.grantTTL, wl.lostGrant), time.Millisecond))
	wl.mu.Unlock()
	return lineWin{}, false, nil
}

// sleep waits for w's bell, wake or ctx, and while this process's subscription is not confirmed
// for its confirmation too (then the head tries again at once, queueing this time).
func (wl *waitLine) sleep(ctx context.Context, w *lineWaiter, wake time.Time, ready <-chan struct{}, subscribed bool) {
	var confirm <-chan struct{}
	if !subscribed {
		confirm = ready
	}
	t := time.NewTimer(time.Until(wake))
	defer t.Stop()
	select {
	case <-w.bell:
	case <-t.C:
	case <-ctx.Done():
	case <-confirm:
		wl.mu.Lock()
		w.next = time.Time{}
		wl.mu.Unlock()
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// try is one run of the acquire script: held and the token, or how long until it is worth
// looking again (ms). deadline 0: a single attempt that does not queue.
func (wl *waitLine) try(ctx context.Context, key, value, leaseMs string, deadline, grantMs int64) (bool, int64, int64, error) {
	r, err := lineAcquire.Run(ctx, wl.rdb, wl.scriptKeys(key), value, time.Now().UnixMilli(), wl.fencedArg(),
		leaseMs, deadline, grantMs).Int64Slice()
	if err != nil {
		err = redisErr("acquire "+key, err)
		orphaned(ctx, err, "line\x00"+key+"\x00"+value, func(ctx context.Context) error {
			_, err := wl.release(ctx, nil, key, value) // out of the Redis line, the lock passed on
			return err
		})
		return false, 0, 0, err
	}
	if len(r) != 2 {
		return false, 0, 0, fmt.Errorf("lock: acquire %s: unexpected reply %v", key, r)
	}
	if r[0] == 1 {
		return true, r[1], 0, nil
	}
	return false, 0, r[1], nil
}

func (wl *waitLine) fencedArg() string {
	if wl.fenced {
		return "1"
	}
	return "0"
}

// enter joins key's line in this process.
func (wl *waitLine) enter(key string, w *lineWaiter) *keyLine {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	kl := wl.keys[key]
	if kl == nil {
		kl = &keyLine{}
		wl.keys[key] = kl
	}
	kl.fifo.enter(w)
	return kl
}

// exit leaves the line. With the lock (won) the value is held from now on. Without it: a lock
// handed to it that it did not take is passed on, else its entry in the Redis line is removed
// (waiting.go rules 20 and 21).
func (wl *waitLine) exit(key string, kl *keyLine, w *lineWaiter, won bool) {
	wl.mu.Lock()
	kl.fifo.leave(w)
	granted := w.granted && !won
	if won {
		wl.held[w.value] = true
		kl.holder, kl.holderUntil = w.value, time.Now().Add(w.lease)
	} else if granted && kl.holder == w.value {
		kl.holder = ""
	}
	if head, ok := kl.fifo.head(); ok {
		head.ring() // also when w was not the head: the holder here may have changed
	} else if kl.holder == "" && wl.keys[key] == kl {
		delete(wl.keys, key)
	}
	wl.mu.Unlock()
	if won {
		return
	}
	if granted {
		go wl.passOn(key, w.value)
		return
	}
	// An entry left behind would hold the Redis line up until its deadline (waiting.go rule 18),
	// so a leave that could not reach Redis (a connection broken by a restart) is tried again.
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	for try := 0; ; try++ {
		_, err := wl.release(ctx, nil, key, w.value)
		if err == nil {
			return
		}
		if try == 4 || !retryable(err) || !sleep(ctx, time.Duration(try+1)*25*time.Millisecond) {
			wl.log.Warn("lock line: leave the line", "key", key, "err", err)
			return
		}
	}
}

// forget ends a hold of value in this process.
func (wl *waitLine) forget(key, value string) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	delete(wl.held, value)
	kl := wl.keys[key]
	if kl == nil || kl.holder != value {
		return
	}
	kl.holder = ""
	if head, ok := kl.fifo.head(); ok {
		head.ring()
	} else {
		delete(wl.keys, key)
	}
}

// release gives back key's lock held by value and passes it on (waiting.go rules 14 and 15),
// after the holder's pipeline p when there is one (runScript); when the lock is not value's, it
// only takes value out of the Redis line. It reports whether the lock was value's.
func (wl *waitLine) release(ctx context.Context, p redis.Pipeliner, key, value string) (bool, error) {
	// The next waiter of this process, if it is not in the Redis line yet (it is the head and
	// has not tried: a holder here was going to pass it on).
	var next *lineWaiter
	// ours: that waiter may have the lock before the Redis line (its process's turn lasts).
	ours := "0"
	wl.mu.Lock()
	if kl := wl.keys[key]; kl != nil && wl.ready != nil && isDone(wl.ready) && kl.holder == value {
		if head, ok := kl.fifo.head(); ok && head.next.IsZero() && !head.granted {
			next = head
			if kl.turns+1 < wl.cohort {
				ours = "1"
			}
		}
	}
	wl.mu.Unlock()
	args := []any{value, time.Now().UnixMilli(), wl.fencedArg(), wl.id + ":", grantChannelPrefix, "", 0, 0, 0, ours}
	if next != nil {
		args[5], args[6], args[7], args[8] = next.value, next.deadline.UnixMilli(), next.grantTTL.Milliseconds(), max(next.lease.Milliseconds(), 1)
	}
	sent := time.Now()
	r, err := runScript(ctx, p, wl.rdb, lineRelease, wl.scriptKeys(key), args...).Slice()
	if err != nil {
		wl.forget(key, value)
		return false, redisErr("release "+key, err)
	}
	code, _ := r[0].(int64)
	if code < 2 {
		wl.forget(key, value)
		return code == 1, nil
	}
	to, _ := r[1].(string)
	tok, _ := r[2].(int64)
	wl.mu.Lock()
	delete(wl.held, value)
	if kl := wl.keys[key]; kl != nil && kl.holder == value {
		if code == 3 && len(r) > 3 {
			kl.turns++ // before the Redis line
		} else {
			kl.turns = 0 // handed to the Redis line, or nobody was in it
		}
		kl.holder = ""
		// A waiter that became the head while the script ran saw the holder here and sleeps
		// until it is told (it was not the next waiter the script put in line): tell it now.
		if head, ok := kl.fifo.head(); ok && head != next {
			head.ring()
		}
	}
	if next != nil && to != next.value {
		// Queued behind in the Redis line by the release: it waits for its grant.
		next.next = time.Now().Add(next.grantTTL)
		next.ring()
	}
	wl.mu.Unlock()
	if strings.HasPrefix(to, wl.id+":") && !wl.deliver(key, to, tok, code == 2, sent) {
		go wl.passOn(key, to)
	}
	return true, nil
}

// extend pushes a lock handed over with less than its lease out to the lease, while it is still
// value's (waiting.go rule 16).
func (wl *waitLine) extend(ctx context.Context, key, value string, lease time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	n, err := fencedRenew.Run(ctx, wl.rdb, []string{key}, value, max(lease.Milliseconds(), 1)).Int()
	if err != nil {
		wl.log.Warn("lock line: extend a lock handed over to its lease", "key", key, "err", err)
	}
	return err == nil && n == 1
}

// close ends the grant subscription. Waiters still waiting fall back to their timers.
func (wl *waitLine) close() error { return wl.sub.Close() }
