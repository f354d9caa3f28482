package lock

import (
	"github.com/seckill-lab/seckill/lock/script"

	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// fairModel is RFairLock's queue as Redisson's own scripts keep it, every move-up written at
// once: the order of the waiters and each one's deadline, against which the deferred move-ups of
// fair_lag.lua are checked.
type fairModel struct {
	queue    []string
	deadline map[string]int64
}

func (m *fairModel) moveUp(from int, by int64) {
	for _, f := range m.queue[from:] {
		m.deadline[f] -= by
	}
}

func (m *fairModel) remove(i int) {
	delete(m.deadline, m.queue[i])
	m.queue = slices.Delete(m.queue, i, i+1)
}

// dropDead is the start of each acquire and release: the dead at the head leave.
func (m *fairModel) dropDead(now int64) {
	for len(m.queue) > 0 && m.deadline[m.queue[0]] <= now {
		m.remove(0)
	}
}

// TestFairDeferredMoveUpsMatchRedisson drives the fair scripts through random joins, takes,
// handovers, give-ups and the passing of time, and checks after every step that the queue is
// Redisson's and that each waiter's deadline, its score less what it still owes, is what
// Redisson's scripts would have written; the scores themselves are never earlier. Waits of up to
// 100 s make the owed move-ups pass a cap of 300 s (the scripts take the cap as an argument)
// again and again, so they are written out in full on the way; the library's own cap, a day, is
// run as well. Only this library's scripts change the queue (what the deferred move-ups need:
// see WithThreadWait).
func TestFairDeferredMoveUpsMatchRedisson(t *testing.T) {
	t.Parallel()
	for _, lagCap := range []int64{300_000, fairLagCap} {
		t.Run(fmt.Sprint(lagCap), func(t *testing.T) { fairLagModel(t, lagCap, false) })
	}
}

// TestFairWithThreadWaitMatchesRedisson: with a thread wait (cap 0) every move-up is
// written at once, so the scores are Redisson's exactly, whatever a Redisson client's own
// scripts do in between: it joins (dropping the dead first, as its acquire does), takes the
// lock, gives up (the last waiter too), and its threads queue again under the same field.
func TestFairWithThreadWaitMatchesRedisson(t *testing.T) {
	t.Parallel()
	fairLagModel(t, 0, true)
}

// fairLagModel runs the random steps with the given cap (the last argument of every fair
// script); foreign mixes in a Redisson client's steps.
func fairLagModel(t *testing.T, lagCap int64, foreign bool) {
	srv := locktest.New(t)
	rdb := locktest.NewClient(t, srv)
	ctx := context.Background()
	const key = "{lag}:lock:fair"
	q, d, lagKey := fairQueue(key), fairDeadlines(key), fairLag(key)
	rng := rand.New(rand.NewPCG(2026, 11))
	m := &fairModel{deadline: map[string]int64{}}
	waits := map[string]int64{}
	now := int64(1_800_000_000_000)
	holder := "p:holder"
	serial := 0
	lastLag, writtenOut := 0.0, 0
	// The lock is held without a TTL throughout, so a first waiter's deadline (PTTL -1 + its
	// wait) does not depend on the clock of the server.
	hold := func(field string) {
		t.Helper()
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, key, field, 1).Err(); err != nil {
			t.Fatal(err)
		}
		holder = field
	}
	hold(holder)
	acquire := func(field string, wait int64) (any, error) {
		return run(ctx, rdb, script.Fair{LagCap: lagCap}.Acquire(key, field, 1_000_000_000, wait, now, 0, true, 0, 0)).Result()
	}
	release := func(id string, wait int64) (any, error) {
		return run(ctx, rdb, script.Fair{ID: id, LagCap: lagCap}.Release(key, holder, 1_000_000_000, now, 1_000_000_000, wait)).Result()
	}
	check := func(step string, ours bool) {
		t.Helper()
		queue, err := rdb.LRange(ctx, q, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(queue, m.queue) {
			t.Fatalf("%s: queue %v, Redisson's would be %v", step, queue, m.queue)
		}
		st, err := rdb.HGetAll(ctx, lagKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		lag, _ := strconv.ParseFloat(st["x"], 64)
		if lag < lastLag && len(queue) > 1 {
			writtenOut++ // LAG_CAP passed: the owed move-ups were written to the deadlines
		}
		lastLag = lag
		if lagCap == 0 && lag != 0 {
			t.Fatalf("%s: %v ms owed with every move-up to be written at once", step, lag)
		}
		for _, f := range queue {
			score, err := rdb.ZScore(ctx, d, f).Result()
			if err != nil {
				t.Fatalf("%s: %s has no deadline: %v", step, f, err)
			}
			owed := lag
			if f == st["h"] {
				owed = 0
			}
			if got, want := int64(score-owed), m.deadline[f]; got != want || score < float64(want) {
				t.Fatalf("%s: %s's deadline %d (score %.0f, owes %.0f), Redisson's would be %d",
					step, f, got, score, owed, want)
			}
		}
		if ours {
			// Locker.Queue reads the same deadlines.
			fields, deadlines, err := readQueue(ctx, rdb, key)
			if err != nil || !slices.Equal(fields, queue) {
				t.Fatalf("%s: readQueue %v, %v; want %v", step, fields, err, queue)
			}
			for i, f := range fields {
				if got := deadlines[i].UnixMilli(); got != m.deadline[f] {
					t.Fatalf("%s: readQueue gives %s the deadline %d, Redisson's would be %d", step, f, got, m.deadline[f])
				}
			}
		}
		if ours && len(queue) > 0 && st["h"] != queue[0] {
			t.Fatalf("%s: the exact deadline is %q's, the first waiter is %s", step, st["h"], queue[0])
		}
	}
	// moveUp is a Redisson client's move-up: ZINCRBY for each waiter.
	moveUp := func(fields []string, by int64) {
		t.Helper()
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, f := range fields {
				p.ZIncrBy(ctx, d, -float64(by), f)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// redissonDropDead is the start of a Redisson client's acquire: the dead at the head leave, by
	// their scores.
	redissonDropDead := func() {
		t.Helper()
		for {
			head, err := rdb.LIndex(ctx, q, 0).Result()
			if err == redis.Nil {
				break
			}
			score, err := rdb.ZScore(ctx, d, head).Result()
			if err != nil || int64(score) > now {
				break
			}
			rdb.ZRem(ctx, d, head)
			rdb.LPop(ctx, q)
		}
		m.dropDead(now)
	}
	pick := func(from int) (int, string) {
		i := from + rng.IntN(len(m.queue)-from)
		return i, m.queue[i]
	}
	for step := range 1500 {
		var what string
		ours := true
		switch op := rng.IntN(100); {
		case op < 40: // one of ours joins
			serial++
			f, w := fmt.Sprintf("p:w%d", serial), int64(1000+rng.IntN(100_000))
			what = "join " + f
			m.dropDead(now)
			last := int64(-1) // the lock's PTTL
			if n := len(m.queue); n > 0 {
				last = m.deadline[m.queue[n-1]] - now
			}
			got, err := acquire(f, w)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got != last {
				t.Fatalf("%s: told %v ms until its turn, Redisson would say %d", what, got, last)
			}
			m.queue = append(m.queue, f)
			m.deadline[f], waits[f] = last+w+now, w
		case op < 50 && foreign: // a Redisson client's thread joins (its threads queue again by name)
			f := fmt.Sprintf("j:t%d", rng.IntN(6))
			if slices.Contains(m.queue, f) {
				continue
			}
			serial++
			w := int64(1000 + rng.IntN(100_000))
			what, ours = "foreign join "+f, false
			redissonDropDead()
			last := int64(-1 + now)
			if n := len(m.queue); n > 0 {
				s, err := rdb.ZScore(ctx, d, m.queue[n-1]).Result()
				if err != nil {
					t.Fatal(err)
				}
				last = int64(s)
			}
			if err := rdb.ZAdd(ctx, d, redis.Z{Score: float64(last + w), Member: f}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.RPush(ctx, q, f).Err(); err != nil {
				t.Fatal(err)
			}
			exact := int64(-1 + now)
			if n := len(m.queue); n > 0 {
				exact = m.deadline[m.queue[n-1]]
			}
			m.queue = append(m.queue, f)
			m.deadline[f], waits[f] = exact+w, w
		case op < 65 && len(m.queue) > 0: // the holder releases; the first waiter takes the lock
			what = "release, then the first waiter takes it"
			if _, err := release("", 0); err != nil && err != redis.Nil {
				t.Fatalf("%s: %v", what, err)
			}
			m.dropDead(now)
			if len(m.queue) == 0 {
				hold("p:holder")
				break
			}
			first := m.queue[0]
			if first[0] == 'j' { // a Redisson client takes it: its own script moves everyone up
				if err := rdb.LPop(ctx, q).Err(); err != nil {
					t.Fatal(err)
				}
				moveUp(m.queue[1:], waits[first])
				rdb.ZRem(ctx, d, first)
				hold(first)
				ours = false
			} else {
				got, err := acquire(first, waits[first])
				if err != redis.Nil {
					t.Fatalf("%s: %s's attempt: %v, %v; want the lock", what, first, got, err)
				}
				holder = first
				rdb.Persist(ctx, key)
			}
			m.remove(0)
			m.moveUp(0, waits[first])
		case op < 75 && len(m.queue) > 0 && m.queue[0][0] == 'p': // a release here hands it over
			what = "release handing over"
			m.dropDead(now)
			if len(m.queue) == 0 || m.queue[0][0] != 'p' {
				what += " (the first waiter was dead)"
				if _, err := release("", 0); err != nil && err != redis.Nil {
					t.Fatalf("%s: %v", what, err)
				}
				hold("p:holder")
				break
			}
			by := int64(1000 + rng.IntN(100_000)) // the releasing holder's wait
			first := m.queue[0]
			got, err := release("p", by)
			if r, _ := got.([]any); err != nil || len(r) != 2 || r[0] != int64(2) || r[1] != first {
				t.Fatalf("%s: %v, %v; want {2, %s}", what, got, err, first)
			}
			holder = first
			rdb.Persist(ctx, key)
			m.remove(0)
			m.moveUp(0, by)
		case op < 85 && len(m.queue) > 0: // one of ours gives up
			i, f := pick(0)
			if f[0] != 'p' {
				continue
			}
			what = "give up " + f
			if err := run(ctx, rdb, script.Fair{LagCap: lagCap}.Cancel(key, f, waits[f])).Err(); err != nil && err != redis.Nil {
				t.Fatalf("%s: %v", what, err)
			}
			m.moveUp(i+1, waits[f])
			m.remove(i)
		case op < 90 && foreign && len(m.queue) > 0: // a Redisson client's thread gives up
			i, f := pick(0)
			if f[0] != 'j' {
				continue
			}
			what, ours = "foreign give up "+f, false
			moveUp(m.queue[i+1:], waits[f])
			rdb.ZRem(ctx, d, f)
			rdb.LRem(ctx, q, 0, f)
			m.moveUp(i+1, waits[f])
			m.remove(i)
		default: // time passes; the next acquire or release drops who is dead by then
			dt := int64(rng.IntN(60_000))
			what = fmt.Sprintf("%d ms pass", dt)
			now += dt
			continue
		}
		check(fmt.Sprintf("step %d (%s)", step, what), ours)
	}
	if lagCap == 0 || lagCap > 300_000 {
		// Every move-up is written at once (nothing is owed to write out), or the steps' waits
		// (100 s at most) do not add up to the cap: there is nothing to count.
		writtenOut = 3
	}
	if serial < 500 || writtenOut < 3 {
		t.Fatalf("only %d waiters joined, and the owed move-ups were written out %d times", serial, writtenOut)
	}
	t.Logf("%d waiters joined; the owed move-ups were written out %d times", serial, writtenOut)
}
