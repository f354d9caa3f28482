package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/lock/lockutil"

	"seckill/store"
)

// The scenarios of row 14: the pitfalls of Redisson's read-write lock (lock.NewReadWrite), driven
// on the library directly. They sell nothing; their figures are their checks and notes.

func init() {
	register(Scenario{Name: "rw-upgrade", Row: 14, Short: "upgrade refused at once", Mode: "readwrite", Library: true, Safe: true,
		Step:   "step 14: RReadWriteLock, the upgrade",
		Expect: "an owner holding the read lock asks for the write lock: ErrUpgrade at once, Redis unchanged (Redisson waits forever)",
		Drive:  driveUpgrade})
	register(Scenario{Name: "rw-upgrade-redisson", Row: 14, Short: "the waiter waits for itself", Mode: "readwrite", Library: true,
		Step: "step 14: RReadWriteLock, Redisson's write script",
		Expect: "the same request with Redisson's write script: the owner waits for its own read hold, " +
			"which its watchdog keeps alive: deadlock",
		Drive: driveUpgradeRedisson})
	register(Scenario{Name: "rw-writer-starved", Row: 14, Short: "writer kept out by readers", Mode: "readwrite", Library: true,
		Step: "step 14: RReadWriteLock, readers first",
		Expect: "overlapping readers keep a writer out until they stop: its wait is over 3x a fair order's; " +
			"the kind has no fix, as Redisson's",
		Drive: driveWriterStarved})
}

// kindKey is the key or name of the library kind a Library row drives, among the row's lock keys
// (deleted when the row ends, with every key the kind keeps beside it).
func (e *Env) kindKey() string { return store.LockKey(e.SKU, e.Scenario.Mode) }

// onClose runs fn when the row ends, before its keys are deleted.
func (e *Env) onClose(fn func()) { e.closers = append(e.closers, fn) }

// readWrite builds the two sides of a read-write lock as one process would, with the row's lease.
func (e *Env) readWrite(name string) (read, write *lock.Locker, err error) {
	read, write, err = lock.NewReadWrite(e.Data, lock.WithLease(e.Lease), lock.WithLogger(e.runner.log().With("process", name)))
	if err != nil {
		return nil, nil, fmt.Errorf("lab: read-write lock for %s: %w", name, err)
	}
	e.onClose(func() { _ = errors.Join(read.Close(), write.Close()) }) // background work only
	return read, write, nil
}

// rwState is what Redis holds of the row's lock: every key under the row's lock prefix (the hash
// and the read holds' timeout keys), with the hash's fields and the strings' values, not their TTLs.
func (e *Env) rwState(ctx context.Context) (string, error) {
	keys, err := scanKeys(ctx, e.Data, store.KeysFor(e.SKU).LockPrefix)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, k := range keys {
		t, err := e.Data.Type(ctx, k).Result()
		if err != nil {
			return "", fmt.Errorf("lab: TYPE %s: %w", k, err)
		}
		switch t {
		case "hash":
			h, err := e.Data.HGetAll(ctx, k).Result()
			if err != nil {
				return "", fmt.Errorf("lab: HGETALL %s: %w", k, err)
			}
			var fields []string
			for f, v := range h {
				fields = append(fields, f+"="+v)
			}
			slices.Sort(fields)
			parts = append(parts, k+" {"+strings.Join(fields, " ")+"}")
		case "string":
			v, err := e.Data.Get(ctx, k).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return "", fmt.Errorf("lab: GET %s: %w", k, err)
			}
			parts = append(parts, k+"="+v)
		default:
			parts = append(parts, k+" ("+t+")")
		}
	}
	return strings.Join(parts, "; "), nil
}

// lost reports whether ch is closed.
func lost(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// upgrader is the owner that holds the read lock and asks for the write lock.
const upgrader = "lab-upgrader"

// driveUpgrade: an owner holds the read lock and asks for the write lock with a wait of four
// leases. The library refuses at once with ErrUpgrade and leaves Redis as it was; the owner's
// read hold stays; released first, the write lock is the owner's.
func driveUpgrade(ctx context.Context, e *Env) error {
	read, write, err := e.readWrite("lab-A")
	if err != nil {
		return err
	}
	key := e.kindKey()
	rl, err := read.Acquire(ctx, key, lock.Options{Owner: upgrader, Wait: e.Lease})
	if err != nil {
		return fmt.Errorf("lab: the read lock: %w", err)
	}
	before, err := e.rwState(ctx)
	if err != nil {
		return err
	}
	wait := 4 * e.Lease
	start := time.Now()
	wl, err := write.Acquire(ctx, key, lock.Options{Owner: upgrader, Wait: wait})
	took := time.Since(start)
	if err == nil {
		_ = wl.Release(ctx) // the check below says it should not have been taken
	}
	after, serr := e.rwState(ctx)
	if serr != nil {
		return serr
	}
	e.Check("the reader's request for the write lock", "ErrUpgrade (and ErrNotObtained)", errName(err),
		errors.Is(err, lock.ErrUpgrade) && errors.Is(err, lock.ErrNotObtained))
	e.Check(fmt.Sprintf("time to the answer (its wait: %s)", ms(wait)), "≤ "+ms(wait/8), took.Round(10*time.Microsecond), took <= wait/8)
	same := "unchanged: " + before
	if before != after {
		same = fmt.Sprintf("before %s; after %s", before, after)
	}
	e.Check("the lock's keys and fields in Redis, before and after the request", "unchanged",
		same, before == after && before != "")
	e.Check("the owner's read lease after the refusal", "still held", heldWord(rl.Lost()), !lost(rl.Lost()))
	// The way out: give the read back, then ask again.
	if err := rl.Release(ctx); err != nil {
		e.Check("the read lease's release", "no error", err, false)
		return nil
	}
	wl, err = write.Acquire(ctx, key, lock.Options{Owner: upgrader, Wait: e.Lease})
	e.Check("the write lock once the read is released", "obtained", errName(err), err == nil)
	if err == nil {
		_ = wl.Release(ctx) // the row's keys are deleted at its end either way
	}
	e.Note("ErrUpgrade came back in %s, with a wait of %s asked for", took.Round(10*time.Microsecond), ms(wait))
	return nil
}

// errName is err's text, "nil" for none.
func errName(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// heldWord says whether a lease whose Lost channel is ch is still held.
func heldWord(ch <-chan struct{}) string {
	if lost(ch) {
		return "lost"
	}
	return "still held"
}

// redissonWriteAcquire is RedissonWriteLock.tryLockInnerAsync as Redisson's protocol has it: the
// library's write script without its upgrade check. It answers nil when the write lock is taken,
// else the lock's PTTL; a reader of the lock gets its PTTL like anyone else.
var redissonWriteAcquire = redis.NewScript(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
`)

// driveUpgradeRedisson: the owner holds the read lock (the library's, which is Redisson's
// layout) and asks for the write lock with Redisson's own write script, tried again as
// Redisson's tryLock does until a wait of two leases ends. Every answer is the lock's PTTL, the
// only holder is the waiter's own read hold, and its watchdog keeps renewing it: with lock() (no
// wait) the owner would wait for ever.
func driveUpgradeRedisson(ctx context.Context, e *Env) error {
	read, _, err := e.readWrite("lab-A")
	if err != nil {
		return err
	}
	key := e.kindKey()
	rl, err := read.Acquire(ctx, key, lock.Options{Owner: upgrader, Wait: e.Lease})
	if err != nil {
		return fmt.Errorf("lab: the read lock: %w", err)
	}
	defer func() { _ = rl.Release(context.WithoutCancel(ctx)) }() // the row's keys are deleted at its end either way
	own := rl.Field()
	wait, step := 2*e.Lease, e.Lease/20
	var attempts, others int
	var holders []string
	got := false
	start := time.Now()
	for time.Since(start) < wait {
		n, err := redissonWriteAcquire.Run(ctx, e.Data, []string{key}, e.Lease.Milliseconds(), own+":write").Int64()
		if errors.Is(err, redis.Nil) {
			got = true
			break
		}
		if err != nil {
			return fmt.Errorf("lab: Redisson's write acquire on %s: %w", key, err)
		}
		attempts++
		fields, err := e.Data.HKeys(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("lab: HKEYS %s: %w", key, err)
		}
		holders = slices.DeleteFunc(fields, func(f string) bool { return f == "mode" })
		if len(holders) != 1 || holders[0] != own {
			others++
		}
		if !lockutil.Sleep(ctx, min(step, time.Duration(max(n, 1))*time.Millisecond)) {
			return ctx.Err()
		}
	}
	waited := time.Since(start)
	pttl, err := e.Data.PTTL(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("lab: PTTL %s: %w", key, err)
	}
	e.Check(fmt.Sprintf("the write lock, asked %d times within %s", attempts, ms(wait)), "never obtained", yesNoGot(got), !got && attempts > 0)
	e.Check("answers where someone but the waiter itself held the lock", "0", others, others == 0)
	e.Check("the waiter's own read hold at the end of the wait: watchdog renewals, PTTL", "≥ 1 renewal, PTTL > 0",
		fmt.Sprintf("%d, %s", rl.Renewals(), pttl), rl.Renewals() >= 1 && pttl > 0 && !lost(rl.Lost()))
	e.SetDeadlock(!got && others == 0 && pttl > 0)
	e.Note("the owner asked for the write lock %d times over %s; each answer was the PTTL of a lock whose only holder is %v, itself",
		attempts, waited.Round(time.Millisecond), holders)
	return nil
}

func yesNoGot(got bool) string {
	if got {
		return "obtained"
	}
	return "never obtained"
}

// A stream of readers and the writers it keeps out.
const (
	starvedProcesses = 3
	starvedWriters   = 2
)

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// span is one hold, as its holder saw it: from Acquire's answer to its release.
type span struct{ from, to time.Time }

// driveWriterStarved: readers on three processes start every tenth of a lease for four leases,
// each holding the read lock half a lease, so that several hold it at every moment. Two writers
// arrive during the stream. Served in arrival order, a writer would wait at most one reader's
// hold: the readers inside when it came. Here readers keep getting in while it waits, and it gets
// the lock only once the stream has stopped.
func driveWriterStarved(ctx context.Context, e *Env) error {
	type side struct{ read, write *lock.Locker }
	var procs []side
	for i := range starvedProcesses {
		r, w, err := e.readWrite(fmt.Sprintf("lab-%c", 'A'+i))
		if err != nil {
			return err
		}
		procs = append(procs, side{r, w})
	}
	key := e.kindKey()
	hold, every, stream := e.Lease/2, e.Lease/10, 4*e.Lease
	var mu sync.Mutex
	var reads []span
	var readErrs []error
	var wg sync.WaitGroup
	start := time.Now()
	reader := func(k int) {
		l, err := procs[k%starvedProcesses].read.Acquire(ctx, key, lock.Options{Wait: e.Lease})
		if err != nil {
			mu.Lock()
			readErrs = append(readErrs, err)
			mu.Unlock()
			return
		}
		from := time.Now()
		lockutil.Sleep(ctx, hold)
		to := time.Now()
		_ = l.Release(context.WithoutCancel(ctx)) // a failed release shows as a writer let in late
		mu.Lock()
		reads = append(reads, span{from, to})
		mu.Unlock()
	}
	type writerRun struct {
		arrived, got time.Time
		err          error
	}
	writers := make([]writerRun, starvedWriters)
	for w := range starvedWriters {
		wg.Go(func() {
			// The first comes after one lease, the second after two: both well inside the stream.
			if !lockutil.Sleep(ctx, time.Duration(w+1)*e.Lease) {
				return
			}
			writers[w].arrived = time.Now()
			l, err := procs[(w+1)%starvedProcesses].write.Acquire(ctx, key, lock.Options{Wait: stream + 4*e.Lease})
			writers[w].got, writers[w].err = time.Now(), err
			if err == nil {
				lockutil.Sleep(ctx, 5*time.Millisecond)
				_ = l.Release(context.WithoutCancel(ctx))
			}
		})
	}
	for k := 0; time.Since(start) < stream; k++ {
		wg.Go(func() { reader(k) })
		if !lockutil.Sleep(ctx, every) {
			break
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	slices.SortFunc(reads, func(a, b span) int { return a.from.Compare(b.from) })
	var longest time.Duration
	got := 0
	for _, w := range writers {
		if w.err == nil && !w.got.IsZero() {
			got++
			longest = max(longest, w.got.Sub(w.arrived))
		}
	}
	last := time.Time{}
	if len(reads) > 0 {
		last = reads[len(reads)-1].from
	}
	// Readers let in while a writer waited, and the longest time from a writer's arrival to the
	// last reader's start when no reader held the lock as the readers saw it (each saw less than
	// Redis held: from Acquire's answer to its release).
	var overtook int
	var gap time.Duration
	for _, w := range writers {
		if w.err != nil {
			continue
		}
		covered := w.arrived
		for _, r := range reads {
			if r.from.After(w.arrived) && r.from.Before(w.got) {
				overtook++
			}
			if r.from.After(last) {
				break
			}
			if r.from.After(covered) {
				gap = max(gap, r.from.Sub(covered))
			}
			covered = later(covered, r.to)
		}
	}
	ratio := float64(longest) / float64(hold)
	e.Check("writers that got the lock in the end", fmt.Sprintf("%d of %d", starvedWriters, starvedWriters),
		fmt.Sprintf("%d of %d", got, starvedWriters), got == starvedWriters)
	e.Check("readers that failed to get the read lock", "0", len(readErrs), len(readErrs) == 0)
	e.Check("readers let in while a writer waited", "> 0", overtook, overtook > 0)
	e.Check(fmt.Sprintf("longest writer's wait ÷ one reader's hold (%s, a fair order's bound)", ms(hold)), "> 3",
		fmt.Sprintf("%s ÷ %s = %.1f", ms(longest), ms(hold), ratio), ratio > 3)
	lastRelease := time.Time{}
	for _, r := range reads {
		lastRelease = later(lastRelease, r.to)
	}
	firstWriter := time.Time{}
	for _, w := range writers {
		if w.err == nil && (firstWriter.IsZero() || w.got.Before(firstWriter)) {
			firstWriter = w.got
		}
	}
	e.Note("%d readers over %s, one every %s, each holding %s; %d writers waited up to %s (fair bound %s: %.1fx); "+
		"readers got in ahead of a waiting writer %d times (counted for each writer); the readers saw no gap over %s in the read holds; "+
		"the first writer got in %s after the last reader started, %s after the last read release",
		len(reads), ms(stream), ms(every), ms(hold), starvedWriters, ms(longest), ms(hold), ratio, overtook,
		ms(gap), firstWriter.Sub(last).Round(time.Millisecond), firstWriter.Sub(lastRelease).Round(time.Millisecond))
	for _, err := range readErrs {
		e.Note("a reader: %v", err)
	}
	return nil
}
