package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// javaFenced stands in for a Java service's RFencedLock on the same Redis, written here from
// the protocol of Redisson's RedissonFencedLock (a RedissonLock whose acquire also raises a token
// counter): the lock is a hash whose field "<client-uuid>:<thread-id>" counts holds; a take, or
// a re-entry, raises "redisson_lock_token:{<name>}" in the same script and returns the new
// value; the unlock counts the field down and, at zero, deletes the lock and publishes "0" on
// "redisson_lock__channel:{<name>}" with the command its subscription service names. A waiter
// subscribes to that channel before it tries again, then tries on every message or when the
// holder's TTL has run out.
type javaFenced struct {
	rdb     *redis.Client
	id      string // the Redisson client's UUID
	lease   time.Duration
	sharded bool // SPUBLISH / SSUBSCRIBE
}

var (
	javaFencedTry = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local t = redis.call('incr', KEYS[2])
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, t}
end
return {redis.call('pttl', KEYS[1]), -1}`)
	javaFencedUnlock = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1`)
)

// braced is Redisson's prefixName: a name with a hash tag keeps it, any other is wrapped.
func braced(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

func (j *javaFenced) field(thread int) string { return fmt.Sprintf("%s:%d", j.id, thread) }

// tryLock is one attempt: the token when taken, else the holder's PTTL.
func (j *javaFenced) tryLock(ctx context.Context, name string, thread int) (int64, time.Duration, error) {
	r, err := javaFencedTry.Run(ctx, j.rdb, []string{name, braced("redisson_lock_token", name)},
		j.lease.Milliseconds(), j.field(thread)).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if r[0] == -1 {
		return r[1], 0, nil
	}
	return 0, time.Duration(r[0]) * time.Millisecond, nil
}

// lock waits up to wait for the lock as RedissonFencedLock.tryLockAndGetToken does.
func (j *javaFenced) lock(ctx context.Context, name string, thread int, wait time.Duration) (int64, error) {
	deadline := time.Now().Add(wait)
	tok, ttl, err := j.tryLock(ctx, name, thread)
	if err != nil || tok > 0 {
		return tok, err
	}
	ch := braced("redisson_lock__channel", name)
	var ps *redis.PubSub
	if j.sharded {
		ps = j.rdb.SSubscribe(ctx, ch)
	} else {
		ps = j.rdb.Subscribe(ctx, ch)
	}
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return 0, err
	}
	msgs := ps.Channel()
	for {
		if tok, ttl, err = j.tryLock(ctx, name, thread); err != nil || tok > 0 {
			return tok, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, lock.ErrNotObtained
		}
		select {
		case <-msgs:
		case <-time.After(min(ttl, left)):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (j *javaFenced) unlock(ctx context.Context, name string, thread int) error {
	cmd := "publish"
	if j.sharded {
		cmd = "spublish"
	}
	err := javaFencedUnlock.Run(ctx, j.rdb, []string{name, braced("redisson_lock__channel", name)},
		"0", j.lease.Milliseconds(), j.field(thread), cmd).Err()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("java unlock %s: not held by thread %d", name, thread)
	}
	return err
}

// rfencedSetup builds a service Locker in RFencedLock's layout and a Java client on one Redis.
func rfencedSetup(t *testing.T, opts ...lock.Option) (*lock.Locker, *javaFenced, *redis.Client, string) {
	t.Helper()
	srv := locktest.New(t)
	c := locktest.NewClient(t, srv)
	l, err := lock.NewFenced(c, append([]lock.Option{lock.WithRFencedLockLayout(), lock.WithInstanceID("svc")}, opts...)...)
	if err != nil {
		t.Fatalf("NewFenced: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, &javaFenced{rdb: c, id: "java-uuid", lease: 30 * time.Second}, c, srv.Kind
}

// TestRFencedLayoutOneCounterBothWays: holders of either side, one after the other, draw
// consecutive tokens from Redisson's counter; while one side holds the lock the other cannot take
// it; a re-entry draws a new token and needs its own release, as RFencedLock's does.
func TestRFencedLayoutOneCounterBothWays(t *testing.T) {
	t.Parallel()
	l, java, c, _ := rfencedSetup(t)
	ctx := t.Context()
	key := "{rf}:lock:fenced"
	counter := "redisson_lock_token:" + key

	var tokens []int64
	for i := range 3 {
		le, err := l.Acquire(ctx, key, lock.Options{Wait: setupWait})
		if err != nil {
			t.Fatalf("round %d: service acquire: %v", i, err)
		}
		tokens = append(tokens, le.Token())
		if typ := c.Type(ctx, key).Val(); typ != "hash" || c.HGet(ctx, key, le.Field()).Val() != "1" {
			t.Fatalf("the service's lock is a %s with field %q = %q, want RLock's hash", typ, le.Field(), c.HGet(ctx, key, le.Field()).Val())
		}
		if tok, ttl, err := java.tryLock(ctx, key, 1); err != nil || tok != 0 || ttl <= 0 {
			t.Fatalf("round %d: Java tryLock while the service holds: token %d, ttl %v, %v", i, tok, ttl, err)
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
		tok, _, err := java.tryLock(ctx, key, 1)
		if err != nil || tok == 0 {
			t.Fatalf("round %d: Java tryLock of the free lock: %d, %v", i, tok, err)
		}
		tokens = append(tokens, tok)
		if le, err := l.Acquire(ctx, key, lock.Options{}); !errors.Is(err, lock.ErrNotObtained) {
			if le != nil {
				_ = le.Release(ctx)
			}
			t.Fatalf("round %d: service acquire while Java holds: %v, want ErrNotObtained", i, err)
		}
		if err := java.unlock(ctx, key, 1); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("tokens in holding order (service, Java, ...): %v", tokens)
	for i, tok := range tokens {
		if tok != int64(i+1) {
			t.Fatalf("tokens %v, want 1, 2, 3, ...: one counter for both sides", tokens)
		}
	}
	if n, err := c.Get(ctx, counter).Int64(); err != nil || n != int64(len(tokens)) {
		t.Fatalf("%s = %d (%v), want %d", counter, n, err, len(tokens))
	}
	if pttl(t, c, counter) != -1 {
		t.Fatalf("the counter has a TTL")
	}

	// Re-entry by one owner: a new token each time, one hold each, released as often.
	a, err := l.Acquire(ctx, key, lock.Options{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Acquire(ctx, key, lock.Options{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Token() != a.Token()+1 || c.HGet(ctx, key, a.Field()).Val() != "2" {
		t.Fatalf("re-entry: tokens %d then %d, count %q; want consecutive tokens and 2 holds",
			a.Token(), b.Token(), c.HGet(ctx, key, a.Field()).Val())
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(t, c, key) {
		t.Fatal("the first of two releases freed the lock")
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(t, c, key) {
		t.Fatal("the lock outlived its last release")
	}
}

// TestRFencedLayoutKeepsDefaultCounterInStep: the default layout's counter, when there is one,
// is where the tokens carry on from, and it follows them, so a switch of layout either way never
// draws a token already handed out.
func TestRFencedLayoutKeepsDefaultCounterInStep(t *testing.T) {
	t.Parallel()
	srv := locktest.New(t)
	c := locktest.NewClient(t, srv)
	ctx := t.Context()
	key := "{rf}:lock:fenced"
	old, err := lock.NewFenced(c)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	for range 2 { // the default layout hands out 1, 2
		le, err := old.Acquire(ctx, key, lock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l, err := lock.NewFenced(c, lock.WithRFencedLockLayout())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	java := &javaFenced{rdb: c, id: "java-uuid", lease: 30 * time.Second}
	var got []int64
	take := func(who string) {
		t.Helper()
		var le *lock.Lease
		switch who {
		case "rfenced":
			le, err = l.Acquire(ctx, key, lock.Options{})
		case "line":
			le, err = old.Acquire(ctx, key, lock.Options{})
		case "java":
			var tok int64
			if tok, _, err = java.tryLock(ctx, key, 7); err == nil {
				got = append(got, tok)
				err = java.unlock(ctx, key, 7)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if le != nil {
			got = append(got, le.Token())
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, who := range []string{"rfenced", "java", "rfenced", "line", "rfenced"} {
		take(who)
	}
	want := []int64{3, 4, 5, 6, 7}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tokens after the default layout's 1, 2: %v, want %v", got, want)
	}
	if a, b := c.Get(ctx, key+":token").Val(), c.Get(ctx, "redisson_lock_token:"+key).Val(); a != "7" || b != "7" {
		t.Fatalf("counters: default %s, RFencedLock's %s; want both 7", a, b)
	}
}

// TestRFencedLayoutWakesTheOtherSide: a Java unlock wakes the service's waiter, and a service
// release wakes a Java waiter, with Redisson's unlock message (SPUBLISH, on a server that has it,
// when the pub/sub is sharded); each holder's lock would have lived 30 s.
func TestRFencedLayoutWakesTheOtherSide(t *testing.T) {
	t.Parallel()
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			l, java, c, kind := rfencedSetup(t, lock.WithShardedPubSub(sharded))
			ctx := t.Context()
			if sharded && (kind != locktest.KindReal || c.Do(ctx, "pubsub", "shardnumsub").Err() != nil) {
				t.Skip("needs a real redis-server 7 or later: the in-process one has no SSUBSCRIBE/SPUBLISH")
			}
			java.sharded = sharded
			key := "{rf}:lock:fenced"
			ch := "redisson_lock__channel:" + key
			subscribers := func() int64 {
				if sharded {
					return c.PubSubShardNumSub(ctx, ch).Val()[ch]
				}
				return c.PubSubNumSub(ctx, ch).Val()[ch]
			}
			waitSubscribed := func(who string) {
				t.Helper()
				for deadline := time.Now().Add(5 * time.Second); subscribers() == 0; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s never subscribed to %s", who, ch)
					}
				}
			}

			// Java holds; the service waits; the Java unlock wakes it.
			jt, _, err := java.tryLock(ctx, key, 1)
			if err != nil || jt == 0 {
				t.Fatalf("Java tryLock: %d, %v", jt, err)
			}
			type result struct {
				at  time.Time
				tok int64
				err error
			}
			svc := make(chan result, 1)
			go func() {
				le, err := l.Acquire(ctx, key, lock.Options{Wait: 20 * time.Second})
				r := result{at: time.Now(), err: err}
				if err == nil {
					r.tok = le.Token()
					r.err = le.Release(ctx)
				}
				svc <- r
			}()
			waitSubscribed("the service's waiter")
			released := time.Now()
			if err := java.unlock(ctx, key, 1); err != nil {
				t.Fatal(err)
			}
			r := <-svc
			if r.err != nil {
				t.Fatalf("service waiter: %v", r.err)
			}
			if r.tok <= jt {
				t.Fatalf("service token %d, not above Java's %d", r.tok, jt)
			}
			serviceWoke := r.at.Sub(released)

			// The service holds; Java waits; the service's release wakes it.
			le, err := l.Acquire(ctx, key, lock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			jres := make(chan result, 1)
			go func() {
				tok, err := java.lock(ctx, key, 2, 20*time.Second)
				jres <- result{at: time.Now(), tok: tok, err: err}
			}()
			waitSubscribed("the Java waiter")
			released = time.Now()
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
			r = <-jres
			if r.err != nil {
				t.Fatalf("Java waiter: %v", r.err)
			}
			if r.tok <= le.Token() {
				t.Fatalf("Java token %d, not above the service's %d", r.tok, le.Token())
			}
			if err := java.unlock(ctx, key, 2); err != nil {
				t.Fatal(err)
			}
			javaWoke := r.at.Sub(released)
			t.Logf("the service's waiter took the lock %v after the Java unlock; the Java waiter %v after the service's release",
				serviceWoke.Round(time.Microsecond), javaWoke.Round(time.Microsecond))
			// Both locks lived 30 s; a waiter that missed the message would sleep that long.
			if serviceWoke > 5*time.Second || javaWoke > 5*time.Second {
				t.Fatalf("woken after %v and %v, want the unlock message, not the TTL", serviceWoke, javaWoke)
			}
		})
	}
}

// TestRFencedLayoutMixedContention: service and Java holders contend for one lock at once; never
// two hold it, the tokens rise in the order they held it, and the counter ends at the last.
func TestRFencedLayoutMixedContention(t *testing.T) {
	t.Parallel()
	l, java, c, _ := rfencedSetup(t)
	ctx := t.Context()
	key := "{rf}:lock:fenced"
	const each = 8 // holders per side
	var (
		mu      sync.Mutex
		order   []string
		last    int64
		inside  atomic.Int32
		overlap atomic.Int32
		wg      sync.WaitGroup
	)
	errs := make(chan error, 2*each)
	critical := func(who string, tok int64) {
		if inside.Add(1) > 1 {
			overlap.Add(1)
		}
		mu.Lock()
		if tok <= last {
			errs <- fmt.Errorf("%s holds with token %d after %d: %v", who, tok, last, order)
		}
		last = tok
		order = append(order, fmt.Sprintf("%s:%d", who, tok))
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		inside.Add(-1)
	}
	for i := range each {
		wg.Go(func() {
			le, err := l.Acquire(ctx, key, lock.Options{Wait: 20 * time.Second})
			if err != nil {
				errs <- fmt.Errorf("service %d: %w", i, err)
				return
			}
			critical("svc", le.Token())
			if err := le.Release(ctx); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			tok, err := java.lock(ctx, key, 100+i, 20*time.Second)
			if err != nil {
				errs <- fmt.Errorf("java %d: %w", i, err)
				return
			}
			critical("java", tok)
			if err := java.unlock(ctx, key, 100+i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := overlap.Load(); n != 0 {
		t.Errorf("%d overlaps between holders", n)
	}
	t.Logf("holding order: %v", order)
	if len(order) != 2*each {
		t.Fatalf("%d holders, want %d", len(order), 2*each)
	}
	if n, err := c.Get(ctx, "redisson_lock_token:"+key).Int64(); err != nil || n != last {
		t.Fatalf("counter %d (%v), want the last token %d", n, err, last)
	}
}
