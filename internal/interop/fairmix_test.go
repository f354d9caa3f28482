package interop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"

	"seckill/internal/testredis"
)

// A second client of the fair lock's Redis layout, written here from the protocol Redisson's
// RFairLock documents (https://github.com/redisson/redisson/wiki/8.-distributed-locks-and-synchronizers#82-fair-lock
// and the layout of RedissonFairLock): the lock hash, a list of waiting fields
// "redisson_lock_queue:{name}" and a zset of their deadlines "redisson_lock_timeout:{name}".
// Every script first drops the waiters at the head whose deadline has passed. A waiter joins at
// the tail, due one thread wait after the one before it (or after the lock's TTL); whoever takes
// the lock moves every deadline up by its own thread wait; a release tells the first in line on
// its own channel "redisson_lock__channel:{name}:<field>"; a waiter that gives up leaves the
// line and the ones behind it move up by its thread wait. Unlike the service's scripts it puts
// no expiry on the queue keys, as Redisson does not.
const rfairPrune = `
local now = tonumber(ARGV[#ARGV])
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then break end
  local due = tonumber(redis.call('zscore', KEYS[3], head))
  if due and due > now then break end
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], head)
end
`

// rfairAcquire: KEYS lock, queue, deadlines; ARGV lease ms, field, thread wait ms, now ms.
// nil when held, else ms until about our turn.
var rfairAcquire = redis.NewScript(rfairPrune + `
local wait = tonumber(ARGV[3])
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == ARGV[2]) then
  if head then redis.call('lpop', KEYS[2]) end
  redis.call('zrem', KEYS[3], ARGV[2])
  for _, w in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -wait, w)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
local mine = redis.call('zscore', KEYS[3], ARGV[2])
if mine then return tonumber(mine) - wait - now end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2])
redis.call('rpush', KEYS[2], ARGV[2])
return ttl`)

// rfairRelease: KEYS lock, queue, deadlines, channel; ARGV lease ms, field, now ms.
var rfairRelease = redis.NewScript(rfairPrune + `
local function tell_first()
  local first = redis.call('lindex', KEYS[2], 0)
  if first then redis.call('publish', KEYS[4] .. ':' .. first, '0') end
end
if redis.call('exists', KEYS[1]) == 0 then tell_first() return 1 end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
tell_first()
return 1`)

// rfairCancel: KEYS queue, deadlines; ARGV field, thread wait ms.
var rfairCancel = redis.NewScript(`
local q = redis.call('lrange', KEYS[1], 0, -1)
local behind = false
for _, w in ipairs(q) do
  if behind then redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), w) end
  if w == ARGV[1] then behind = true end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return 0`)

// rfair is the second client: one Redisson-like process with its own id and thread wait.
type rfair struct {
	rdb        *redis.Client
	id         string
	threadWait time.Duration
	lease      time.Duration
}

func rkeys(name string) (lockKey, queue, deadlines, channel string) {
	return name, "redisson_lock_queue:{" + name + "}", "redisson_lock_timeout:{" + name + "}",
		"redisson_lock__channel:{" + name + "}"
}

// try runs the acquire script once for thread: held, or about how long until its turn.
func (c *rfair) try(ctx context.Context, name, thread string) (bool, time.Duration, error) {
	k, q, d, _ := rkeys(name)
	n, err := rfairAcquire.Run(ctx, c.rdb, []string{k, q, d}, c.lease.Milliseconds(), c.id+":"+thread,
		c.threadWait.Milliseconds(), time.Now().UnixMilli()).Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	return false, time.Duration(n) * time.Millisecond, err
}

// lock is RLock.tryLock(wait, lease) of a Redisson thread: subscribe to the thread's channel, try,
// and sleep until told or until the estimated turn, until wait is over; then leave the queue.
func (c *rfair) lock(ctx context.Context, name, thread string, wait time.Duration) error {
	_, q, d, ch := rkeys(name)
	field := c.id + ":" + thread
	ps := c.rdb.Subscribe(ctx, ch+":"+field)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return err
	}
	msgs := ps.Channel()
	end := time.Now().Add(wait)
	for {
		held, ttl, err := c.try(ctx, name, thread)
		if err != nil || held {
			return err
		}
		left := time.Until(end)
		if left <= 0 {
			err := rfairCancel.Run(context.WithoutCancel(ctx), c.rdb, []string{q, d}, field, c.threadWait.Milliseconds()).Err()
			return errors.Join(fmt.Errorf("%s: not obtained within %s", field, wait), err)
		}
		t := time.NewTimer(min(max(ttl, time.Millisecond), left))
		select {
		case <-msgs:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

func (c *rfair) unlock(ctx context.Context, name, thread string) error {
	k, q, d, ch := rkeys(name)
	return rfairRelease.Run(ctx, c.rdb, []string{k, q, d, ch}, c.lease.Milliseconds(), c.id+":"+thread,
		time.Now().UnixMilli()).Err()
}

// fairLine runs one mixed line: the holders' log, with a check that there is never more than one.
type fairLine struct {
	t       *testing.T
	rdb     *redis.Client
	name    string
	mu      sync.Mutex
	order   []string
	at      map[string]time.Time
	holders atomic.Int32
	hold    time.Duration
	// onHeld, if set, runs in each holder's critical section.
	onHeld func(who string)
}

func newFairLine(t *testing.T, rdb *redis.Client, name string) *fairLine {
	return &fairLine{t: t, rdb: rdb, name: name, at: map[string]time.Time{}, hold: 20 * time.Millisecond}
}

// critical is a holder's turn: counted, logged, held a moment.
func (f *fairLine) critical(who string) {
	if n := f.holders.Add(1); n != 1 {
		f.t.Errorf("%s holds the lock with %d others", who, n-1)
	}
	f.mu.Lock()
	f.order = append(f.order, who)
	f.at[who] = time.Now()
	f.mu.Unlock()
	if f.onHeld != nil {
		f.onHeld(who)
	}
	time.Sleep(f.hold)
	f.holders.Add(-1)
}

// queued waits until field is in the Redis queue.
func (f *fairLine) queued(field string) {
	f.t.Helper()
	_, q, _, _ := rkeys(f.name)
	waitFor(f.t, 5*time.Second, field+" in the queue", func() bool {
		fs, err := f.rdb.LRange(context.Background(), q, 0, -1).Result()
		return err == nil && slices.Contains(fs, field)
	})
}

// service starts a service waiter (owner who on l) in the background.
func (f *fairLine) service(wg *sync.WaitGroup, l *lock.Locker, who string, wait time.Duration, errs chan<- error) {
	wg.Go(func() {
		ctx := context.Background()
		le, err := l.Acquire(ctx, f.name, lock.Options{Owner: who, Wait: wait})
		if err != nil {
			errs <- fmt.Errorf("service waiter %s: %w", who, err)
			return
		}
		f.critical(who)
		if err := le.Release(ctx); err != nil {
			errs <- fmt.Errorf("service waiter %s release: %w", who, err)
		}
	})
}

// java starts a waiter of the second client (thread who) in the background.
func (f *fairLine) java(wg *sync.WaitGroup, c *rfair, who string, wait time.Duration, errs chan<- error) {
	wg.Go(func() {
		ctx := context.Background()
		if err := c.lock(ctx, f.name, who, wait); err != nil {
			errs <- fmt.Errorf("java waiter %s: %w", who, err)
			return
		}
		f.critical(who)
		if err := c.unlock(ctx, f.name, who); err != nil {
			errs <- fmt.Errorf("java waiter %s unlock: %w", who, err)
		}
	})
}

func collect(t *testing.T, wg *sync.WaitGroup, errs chan error) {
	t.Helper()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func fairSetup(t *testing.T, serviceWait time.Duration) (*redis.Client, *lock.Locker) {
	t.Helper()
	rdb := testredis.Client(t, testredis.Start(t))
	locktest.Install(rdb)
	l, err := lock.NewFair(rdb, lock.WithInstanceID("svc"), lock.WithThreadWait(serviceWait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return rdb, l
}

// TestMixedFairLineEqualWaits: service and Redisson-protocol waiters queue alternately behind a
// foreign holder, every one with the same thread wait: they are served in the order they queued,
// across both sides, and at every turn the queue holds exactly the ones not served yet (nobody
// alive was dropped).
func TestMixedFairLineEqualWaits(t *testing.T) {
	t.Parallel()
	const threadWait = 3 * time.Second
	rdb, svc := fairSetup(t, threadWait)
	java := &rfair{rdb: rdb, id: "java-uuid", threadWait: threadWait, lease: 30 * time.Second}
	f := newFairLine(t, rdb, "interop-fair-equal")
	ctx := context.Background()
	if held, _, err := java.try(ctx, f.name, "holder"); err != nil || !held {
		t.Fatalf("the foreign holder: held %v, %v", held, err)
	}
	who := []string{"s1", "j1", "s2", "j2", "s3", "j3"}
	field := func(w string) string {
		if w[0] == 's' {
			return "svc:" + w
		}
		return "java-uuid:" + w
	}
	_, q, _, _ := rkeys(f.name)
	f.onHeld = func(w string) {
		i := slices.Index(who, w)
		var want []string
		for _, rest := range who[i+1:] {
			want = append(want, field(rest))
		}
		got, err := rdb.LRange(ctx, q, 0, -1).Result()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("while %s holds the lock the queue is %v (%v), want %v", w, got, err, want)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(who))
	for _, w := range who {
		if w[0] == 's' {
			f.service(&wg, svc, w, 20*time.Second, errs)
		} else {
			f.java(&wg, java, w, 20*time.Second, errs)
		}
		f.queued(field(w))
	}
	if err := java.unlock(ctx, f.name, "holder"); err != nil {
		t.Fatal(err)
	}
	collect(t, &wg, errs)
	if !slices.Equal(f.order, who) {
		t.Fatalf("served %v, want the order they queued in, %v", f.order, who)
	}
}

// TestMixedFairLineUnequalWaits: the second client's thread wait is 20 times the service's (a
// Redisson client on its default fairLockWaitTimeout, 5 min, beside a service on 15 s). Queue:
// j1, s1, s2, j2 behind a foreign holder. What it shows:
//
//   - When j1 takes the lock, the deadlines of those behind it move up by j1's wait, which is
//     exactly what j1 added to them when they queued behind it: none goes into the past then
//     (each deadline carries the waits of those ahead of it, and each taker removes its own).
//   - But a deadline does not count the hold of whoever took the lock: j1 holds longer than the
//     service waiters' short thread wait, so their deadlines pass while they wait, alive, and the
//     next script drops them; j2's long wait keeps its place. The dropped waiters come back
//     within their thread wait, join again at the tail (behind j2: they lose their places) and
//     still get the lock. Nobody hangs, never two holders.
func TestMixedFairLineUnequalWaits(t *testing.T) {
	t.Parallel()
	const serviceWait = 500 * time.Millisecond
	rdb, svc := fairSetup(t, serviceWait)
	java := &rfair{rdb: rdb, id: "java-uuid", threadWait: 20 * serviceWait, lease: 30 * time.Second}
	f := newFairLine(t, rdb, "interop-fair-unequal")
	f.hold = 4 * serviceWait
	ctx := context.Background()
	if held, _, err := java.try(ctx, f.name, "holder"); err != nil || !held {
		t.Fatalf("the foreign holder: held %v, %v", held, err)
	}
	// The holder is near the end of its lease (a second left), so the deadlines are near too.
	if err := rdb.PExpire(ctx, f.name, time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	_, q, d, _ := rkeys(f.name)
	var dueAfterJ1 []time.Duration
	f.onHeld = func(w string) {
		if w != "j1" {
			return
		}
		now := time.Now()
		for _, s := range []string{"svc:s1", "svc:s2", "java-uuid:j2"} {
			due, err := rdb.ZScore(ctx, d, s).Result()
			if err != nil {
				t.Errorf("%s is not in line when j1 takes the lock: %v", s, err)
				continue
			}
			dueAfterJ1 = append(dueAfterJ1, time.UnixMilli(int64(due)).Sub(now).Round(time.Millisecond))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	f.java(&wg, java, "j1", 20*time.Second, errs)
	f.queued("java-uuid:j1")
	f.service(&wg, svc, "s1", 20*time.Second, errs)
	f.queued("svc:s1")
	f.service(&wg, svc, "s2", 20*time.Second, errs)
	f.queued("svc:s2")
	f.java(&wg, java, "j2", 20*time.Second, errs)
	f.queued("java-uuid:j2")
	released := time.Now()
	if err := java.unlock(ctx, f.name, "holder"); err != nil {
		t.Fatal(err)
	}
	collect(t, &wg, errs)
	since := func(w string) time.Duration { return f.at[w].Sub(released).Round(time.Millisecond) }
	t.Logf("served %v; deadlines of s1, s2, j2 from the moment j1 took the lock: %v; after the holder's release: j1 +%v, j2 +%v, s1 +%v, s2 +%v",
		f.order, dueAfterJ1, since("j1"), since("j2"), since("s1"), since("s2"))
	if len(dueAfterJ1) != 3 || slices.ContainsFunc(dueAfterJ1, func(d time.Duration) bool { return d <= 0 }) {
		t.Errorf("deadlines when j1 took the lock: %v, want all still ahead", dueAfterJ1)
	}
	if len(f.order) != 4 || f.order[0] != "j1" || f.order[1] != "j2" {
		t.Fatalf("served %v, want j1, then j2 (the service waiters, dropped while j1 held, lost their places), then s1 and s2", f.order)
	}
	// Each dropped waiter joined again within its thread wait: it is served right after j2.
	// Without looking again it would sleep out its whole wait (20 s).
	for _, s := range []string{"s1", "s2"} {
		if late := f.at[s].Sub(f.at["j2"]); late > 2*f.hold+time.Second {
			t.Errorf("%s took the lock %v after j2, want within a hold or two", s, late)
		}
	}
	if n, err := rdb.Exists(ctx, q, d, f.name).Result(); err != nil || n != 0 {
		t.Errorf("%d of the lock's keys left after the last release (%v)", n, err)
	}
}

// TestMixedFairLineKilledWaiter: a waiter of either side that dies while queued first in line
// holds the next one up until its own deadline, not longer. The second client's waiter dies by
// never coming back; the service's by the crash hook (every command of that acquisition fails
// from then on, its leaving the queue included, as for a process killed there); it runs on its
// own Locker, like another process, so no release hands it the lock in process.
func TestMixedFairLineKilledWaiter(t *testing.T) {
	t.Parallel()
	const threadWait = time.Second
	for _, dead := range []string{"java", "service"} {
		t.Run(dead, func(t *testing.T) {
			t.Parallel() // each on a server of its own
			rdb, svc := fairSetup(t, threadWait)
			java := &rfair{rdb: rdb, id: "java-uuid", threadWait: threadWait, lease: 30 * time.Second}
			f := newFairLine(t, rdb, "interop-fair-killed-"+dead)
			ctx := context.Background()
			if held, _, err := java.try(ctx, f.name, "holder"); err != nil || !held {
				t.Fatalf("the foreign holder: held %v, %v", held, err)
			}
			// Hold the lock for less than a second, so the dead waiter's deadline is near.
			if err := rdb.PExpire(ctx, f.name, 800*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			var deadField string
			if dead == "java" {
				deadField = "java-uuid:dead"
				if held, _, err := java.try(ctx, f.name, "dead"); err != nil || held {
					t.Fatalf("the dead waiter's only attempt: held %v, %v", held, err)
				}
				f.service(&wg, svc, "next", 20*time.Second, errs)
				f.queued("svc:next")
			} else {
				deadField = "other:dead"
				other, err := lock.NewFair(rdb, lock.WithInstanceID("other"), lock.WithThreadWait(threadWait))
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				cctx, h := locktest.Attach(ctx, locktest.Plan{})
				died := make(chan error, 1)
				go func() {
					// Its own wait only bounds how long the test waits for its answer: dead, it
					// is in nobody's way after its deadline in the queue (a thread wait).
					_, err := other.Acquire(cctx, f.name, lock.Options{Owner: "dead", Wait: 3 * threadWait})
					died <- err
				}()
				f.queued(deadField)
				h.Crash()
				f.java(&wg, java, "next", 20*time.Second, errs)
				f.queued("java-uuid:next")
				defer func() {
					if err := <-died; !errors.Is(err, locktest.ErrCrashed) {
						t.Errorf("the crashed waiter's Acquire: %v, want ErrCrashed", err)
					}
				}()
			}
			_, _, d, _ := rkeys(f.name)
			due, err := rdb.ZScore(ctx, d, deadField).Result()
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.UnixMilli(int64(due))
			if err := java.unlock(ctx, f.name, "holder"); err != nil {
				t.Fatal(err)
			}
			collect(t, &wg, errs)
			got := f.at["next"]
			t.Logf("the next waiter took the lock %v after the dead one's deadline", got.Sub(deadline).Round(time.Millisecond))
			if got.After(deadline.Add(threadWait)) {
				t.Errorf("the next waiter took the lock at %v, more than a thread wait after the dead waiter's deadline %v",
					got.Format("15:04:05.000"), deadline.Format("15:04:05.000"))
			}
		})
	}
}
