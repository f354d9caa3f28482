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

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

var (
	lineAcquire = redis.NewScript(script.LineAcquire)
	lineRelease = redis.NewScript(script.LineRelease)
)

// waitLine is how modes lua and fenced wait: in this process in the key's queue (handoff.go, the
// queue every kind but fair waits in), whose head alone goes to Redis, and across processes in
// the line in Redis (script/lua/line.lua), from which a release hands the lock to one waiter,
// whichever process it is in, by writing that waiter's value into the lock. This file keeps what
// the hand-over adds to the queue: a waiter told it holds the lock does not try, a waiter the
// release put in the Redis line waits for its grant, and a release passes this process's next
// waiter on itself (the cohort). The rules of waiting are in waiting.go: rules 13–17 apply here
// (with 3, 6, 7, 9–11 and 18–23).
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
	// queue is the in-process queue of each key; a waiter's place is named by its value.
	queue *handoff
	// sub is the Locker's pub/sub connection (pubsub.go), on which the grant channel is
	// subscribed once, on the first wait, for the Locker's life.
	sub        *subscriber
	subscribed sync.Once

	mu sync.Mutex
	// waiting are this process's waiters, by value, from the start of their wait to its end.
	waiting map[string]*lineWaiter
	// turns counts, per key, the releases in a row here that handed the lock to this process's
	// next waiter before the Redis line (waiting.go rule 15; the script does not look whether
	// anyone waits in it, so the count is reset only by a release that does).
	turns map[string]int
	// holders are, per key, the holder in this process, from the moment a waiter got the lock
	// until its release has run, and until when its lock lives at most: its release will hand
	// the lock on, or put the head in the Redis line, and ring the key's queue, so the head need
	// not try before that or until (waiting.go rule 7); and a late grant message for it is not
	// taken for an orphan.
	holders map[string]holding
	ready   <-chan struct{} // closed once the grant channel's subscription is confirmed
}

// holding is a holder in this process.
type holding struct {
	value string
	until time.Time
}

// lineWaiter is one waiter. Fields other than the first four are guarded by waitLine.mu.
type lineWaiter struct {
	value    string
	lease    time.Duration
	grantTTL time.Duration // min(lease, wait, maxGrant): how long a lock handed to it lives unrenewed
	deadline time.Time

	// granted: a release handed it the lock (with token; short: with grantTTL, less than the
	// lease, waiting.go rule 16), sent at since.
	granted bool
	token   int64
	short   bool
	since   time.Time
	// queued: it is in the Redis line (its attempt put it there, or a release did). until is
	// when it tries again at the latest, without a grant: a ring before then does not make it
	// try (its last attempt's answer, or a release that queued it, said when it is worth it).
	queued bool
	until  time.Time
	// sent is when its last attempt was sent (its creation before any).
	sent time.Time
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

// newWaitLine builds a Locker's line; instance (WithInstanceID) starts its id, so a lock's value
// names the process that holds it (with ':' and white space, which the scripts split on, made '_').
func newWaitLine(rdb redis.UniversalClient, log *slog.Logger, fenced bool, instance string) *waitLine {
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	if instance != "" {
		id = idUnsafe.Replace(instance) + "." + id
	}
	everything := func(string) bool { return true } // every payload on the grant channel is a grant
	wl := &waitLine{rdb: rdb, log: log, fenced: fenced, cohort: cohort, lostGrant: lostGrantBound, maxGrant: maxGrantTTL,
		id: id, channel: grantChannelPrefix + id, sub: newSubscriber(rdb, log, everything),
		waiting: map[string]*lineWaiter{}, turns: map[string]int{}, holders: map[string]holding{}}
	// The grant channel is the process's, not the key's: a queue joins it, and is rung by deliver.
	wl.queue = newHandoff(func(string, func()) (<-chan struct{}, func()) { return wl.subscribe(), func() {} }, nil)
	// A release here rings its key's queue itself (release, forget).
	wl.queue.localRing = true
	return wl
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

// lookAgain makes the head of every key's queue in this process try again at once.
func (wl *waitLine) lookAgain() {
	wl.mu.Lock()
	for _, w := range wl.waiting {
		w.until = time.Time{}
	}
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
	if wl.holders[key].value == value {
		wl.mu.Unlock()
		return true // taken already by its own attempt
	}
	w := wl.waiting[value]
	if w == nil {
		wl.mu.Unlock()
		return false
	}
	if !w.granted {
		w.granted, w.token, w.short = true, token, short
		w.since = since
		if since.IsZero() {
			w.since = w.sent
		}
	}
	wl.mu.Unlock()
	wl.queue.ring(key) // it is the head: only a head is in the Redis line, or passed on by a release
	return true
}

// passOn hands on a lock that was handed to a waiter that had left (waiting.go rule 21).
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
func (wl *waitLine) acquire(ctx context.Context, key, value string, lease, wait time.Duration) (int64, *tenure, error) {
	win, err := wl.wait(ctx, key, value, lease, wait)
	if err != nil {
		return 0, nil, err
	}
	ttl := lease
	if win.short && win.grantTTL < lease {
		ttl = win.grantTTL
	}
	return win.token, &tenure{ttl: ttl, until: win.since.Add(ttl)}, nil
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

// wait waits in key's queue and line until value holds the lock, the wait runs out or ctx ends.
func (wl *waitLine) wait(ctx context.Context, key, value string, lease, wait time.Duration) (lineWin, error) {
	leaseMs := strconv.FormatInt(max(lease.Milliseconds(), 1), 10)
	if wait <= 0 {
		return wl.once(ctx, key, value, lease, leaseMs)
	}
	ready := wl.subscribe()
	w := &lineWaiter{value: value, lease: lease, grantTTL: core.GrantTTL(lease, wait, wl.maxGrant),
		deadline: time.Now().Add(wait), sent: time.Now()}
	wl.mu.Lock()
	wl.waiting[value] = w
	wl.mu.Unlock()
	var win lineWin
	err := wl.queue.obtain(ctx, key, value, wait, lease, false, func(ctx context.Context) (held bool, next time.Duration, err error) {
		win, held, next, err = wl.attempt(ctx, key, value, leaseMs, w, isDone(ready))
		return held, next, err
	})
	wl.exit(key, w, err == nil)
	return win, err
}

// once is a single attempt that does not queue (no wait).
func (wl *waitLine) once(ctx context.Context, key, value string, lease time.Duration, leaseMs string) (lineWin, error) {
	win := lineWin{since: time.Now()}
	held, tok, _, err := wl.try(ctx, key, value, leaseMs, 0, 0)
	switch {
	case err != nil:
		return win, obtainErr(ctx, key, err)
	case !held:
		return win, notObtained(ctx, key)
	}
	wl.mu.Lock()
	wl.holders[key] = holding{value: value, until: win.since.Add(lease)}
	wl.mu.Unlock()
	win.token = tok
	return win, nil
}

// attempt is the head's turn: a lock handed to it is taken without a word to Redis, and so is
// the wait for a grant a release queued it for; else it runs the acquire script. A grant
// published before this process's subscription is confirmed would be lost (and found only by the
// waiter's next attempt), so until then the head tries without queueing, every few milliseconds,
// as a poll would. It returns the win, or how long until it is worth looking again.
func (wl *waitLine) attempt(ctx context.Context, key, value, leaseMs string, w *lineWaiter, subscribed bool) (lineWin, bool, time.Duration, error) {
	sent := time.Now()
	wl.mu.Lock()
	switch h, here := wl.holders[key]; {
	case w.granted:
		wl.mu.Unlock()
		return lineWin{token: w.token, short: w.short, grantTTL: w.grantTTL, since: w.since}, true, 0, nil
	case sent.Before(w.until):
		wl.mu.Unlock()
		return lineWin{}, false, w.until.Sub(sent), nil
	case here && sent.Before(h.until): // a holder here: its release rings (waiting.go rule 7)
		wl.mu.Unlock()
		return lineWin{}, false, h.until.Sub(sent), nil
	}
	w.sent = sent
	wl.mu.Unlock()
	queueUntil := w.deadline.UnixMilli()
	if !subscribed {
		queueUntil = 0
	}
	held, tok, ms, err := wl.try(ctx, key, value, leaseMs, queueUntil, w.grantTTL.Milliseconds())
	if err != nil || held {
		return lineWin{token: tok, since: sent}, held, 0, err
	}
	d := core.LineSleep(time.Duration(ms)*time.Millisecond, w.grantTTL, wl.lostGrant, subscribed)
	wl.mu.Lock()
	// A ring before then (a release here that handed the lock elsewhere) is no reason to try:
	// only a grant, or a lookAgain, is.
	w.queued, w.until = w.queued || subscribed, time.Now().Add(d)
	wl.mu.Unlock()
	return lineWin{}, false, d, nil
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

// exit ends value's wait. With the lock (won) the value is held from now on. Without it: a lock
// handed to it that it did not take is passed on, else its entry in the Redis line is removed
// (waiting.go rules 20 and 21).
func (wl *waitLine) exit(key string, w *lineWaiter, won bool) {
	wl.mu.Lock()
	delete(wl.waiting, w.value)
	if won {
		wl.holders[key] = holding{value: w.value, until: time.Now().Add(w.lease)}
	}
	granted := w.granted && !won
	wl.mu.Unlock()
	switch {
	case won:
		return
	case granted:
		go wl.passOn(key, w.value)
		return
	}
	// An entry left behind would hold the Redis line up until its deadline (waiting.go rule 18),
	// so a leave that could not reach Redis (a connection broken by a restart) is sent again, in
	// the background: the waiter returns at once.
	leave := func(ctx context.Context) error {
		_, err := wl.release(ctx, nil, key, w.value)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	err := leave(ctx)
	cancel()
	if !answered(err) {
		go func() {
			if err := resend(context.Background(), time.Now().Add(releaseTimeout), leave); err != nil {
				wl.log.Warn("lock line: leave the line", "key", key, "err", err)
			}
		}()
	} else if err != nil {
		wl.log.Warn("lock line: leave the line", "key", key, "err", err)
	}
}

// forget ends a hold of value in this process: its key's head may try now.
func (wl *waitLine) forget(key, value string) {
	wl.mu.Lock()
	was := wl.dropHolder(key, value)
	wl.mu.Unlock()
	if was {
		wl.queue.ring(key)
	}
}

// dropHolder forgets value as key's holder here, if it is; wl.mu is held.
func (wl *waitLine) dropHolder(key, value string) bool {
	if wl.holders[key].value != value {
		return false
	}
	delete(wl.holders, key)
	return true
}

// release gives back key's lock held by value and passes it on (waiting.go rules 14 and 15),
// after the holder's pipeline p when there is one (runScript); when the lock is not value's, it
// only takes value out of the Redis line. It reports whether the lock was value's.
func (wl *waitLine) release(ctx context.Context, p redis.Pipeliner, key, value string) (bool, error) {
	next, ours := wl.nextWaiter(key, value)
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
	wl.dropHolder(key, value)
	if code == 3 && len(r) > 3 {
		wl.turns[key]++ // before the Redis line
	} else {
		delete(wl.turns, key) // handed to the Redis line, or nobody was in it
	}
	if next != nil && to != next.value {
		// Queued behind in the Redis line by the release: it waits for its grant.
		next.queued, next.until = true, time.Now().Add(next.grantTTL)
	}
	wl.mu.Unlock()
	if strings.HasPrefix(to, wl.id+":") && !wl.deliver(key, to, tok, code == 2, sent) {
		go wl.passOn(key, to)
	}
	// The head looks at what the release did: a waiter that became the head while the script
	// ran, or the next waiter queued behind, learns it without a word to Redis.
	wl.queue.ring(key)
	return true, nil
}

// nextWaiter is what a release of value passes on to this process's next waiter: that waiter
// (the head of key's queue, when the release is a holder's here and the head is not in the Redis
// line yet) and whether it may have the lock before the Redis line ("1": its process's turn
// lasts, waiting.go rule 15).
func (wl *waitLine) nextWaiter(key, value string) (*lineWaiter, string) {
	head, ok := wl.queue.headOf(key)
	wl.mu.Lock()
	defer wl.mu.Unlock()
	if !ok || wl.holders[key].value != value || wl.ready == nil || !isDone(wl.ready) {
		return nil, "0"
	}
	w := wl.waiting[head]
	if w == nil || w.queued || w.granted {
		return nil, "0"
	}
	if wl.turns[key]+1 < wl.cohort {
		return w, "1"
	}
	return w, "0"
}

// close ends the grant subscription. Waiters still waiting fall back to their timers.
func (wl *waitLine) close() error { return wl.sub.Close() }
