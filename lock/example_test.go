package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// exampleRedis starts n throwaway Redis servers for an example (a real redis-server when
// installed, else an in-process one) and returns a client on each and a function that stops them.
func exampleRedis(n int) ([]redis.UniversalClient, []*locktest.Server, func()) {
	var clients []redis.UniversalClient
	var servers []*locktest.Server
	for range n {
		s, err := locktest.Start(locktest.Options{})
		if err != nil {
			log.Fatal(err)
		}
		servers = append(servers, s)
		clients = append(clients, s.Client())
	}
	return clients, servers, func() {
		for i := range servers {
			_ = clients[i].Close()
			servers[i].Close()
		}
	}
}

// A reentrant lock held three leases long: the watchdog renews it every lease/3, so it is still
// ours at the end; the same owner re-enters and needs as many releases.
func ExampleNewReentrant() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	rdb := clients[0]
	ctx := context.Background()

	locker, err := lock.NewReentrant(rdb, lock.WithLease(300*time.Millisecond), lock.WithInstanceID("worker-1"))
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "report", lock.Options{Owner: "job-42", Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-lease.Lost():
		fmt.Println("lost the lock")
	case <-time.After(900 * time.Millisecond): // the job: three leases long
		fmt.Println("still held after three leases:", rdb.HGet(ctx, "report", "worker-1:job-42").Val() == "1")
	}

	inner, err := locker.Acquire(ctx, "report", lock.Options{Owner: "job-42"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("re-entered, holds:", rdb.HGet(ctx, "report", "worker-1:job-42").Val())
	_, err = locker.Acquire(ctx, "report", lock.Options{Owner: "someone-else"})
	fmt.Println("another owner:", errors.Is(err, lock.ErrNotObtained))

	for _, l := range []*lock.Lease{inner, lease} {
		if err := l.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("released, key left:", rdb.Exists(ctx, "report").Val())
	// Output:
	// still held after three leases: true
	// re-entered, holds: 2
	// another owner: true
	// released, key left: 0
}

// Fencing: a holder that stalls past its lease loses the lock to the next one, which gets a newer
// token. The resource checks the token on every access, the read as the write, so the stale
// holder's write is refused even though the new holder has not written yet.
func ExampleNewFenced() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	rdb := clients[0]
	ctx := context.Background()

	// The resource keeps the newest token it has seen, on a read as on a write, and refuses an
	// older one. Checking the write alone is not enough: a holder that read before a newer
	// holder's read, and writes after it, would overwrite what the newer holder is about to
	// write from the same read (a lost update).
	access := redis.NewScript(`
local newest = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[1]) < newest then return redis.error_reply('STALE token ' .. ARGV[1] .. ' < ' .. newest) end
redis.call('SET', KEYS[2], ARGV[1])
if ARGV[2] == '' then return redis.call('GET', KEYS[1]) end
redis.call('SET', KEYS[1], ARGV[2])
return ARGV[2]`)
	keys := []string{"{doc}:stock", "{doc}:token"}
	read := func(token int64) string { return access.Run(ctx, rdb, keys, token, "").Val().(string) }
	write := func(token int64, stock string) bool { return access.Run(ctx, rdb, keys, token, stock).Err() == nil }
	rdb.Set(ctx, "{doc}:stock", "10", 0)

	locker, err := lock.NewFenced(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	// A takes the lock with a short lease and no watchdog, reads, then stalls past its lease.
	a, err := locker.Acquire(ctx, "{doc}:lock", lock.Options{Lease: 100 * time.Millisecond, ExplicitLease: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("A reads:", read(a.Token()))
	time.Sleep(200 * time.Millisecond)

	// B gets the lock and reads the same stock; A wakes and writes before B does.
	b, err := locker.Acquire(ctx, "{doc}:lock", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("B's token is newer:", b.Token() > a.Token())
	fmt.Println("B reads:", read(b.Token()))
	fmt.Println("A writes 9 late:", write(a.Token(), "9"))
	fmt.Println("B writes 9:", write(b.Token(), "9"))
	fmt.Println("stock:", rdb.Get(ctx, "{doc}:stock").Val())
	fmt.Println("A's release:", errors.Is(a.Release(ctx), lock.ErrNotHeld))
	if err := b.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// A reads: 10
	// B's token is newer: true
	// B reads: 10
	// A writes 9 late: false
	// B writes 9: true
	// stock: 9
	// A's release: true
}

// Redlock on three independent masters keeps working with one of them down, and refuses the
// lock when a majority is gone; the error names the masters that failed.
func ExampleNewRedlock() {
	masters, servers, stop := exampleRedis(3)
	defer stop()
	ctx := context.Background()

	locker, err := lock.NewRedlock(masters, lock.WithLease(2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	servers[2].Stop()
	lease, err := locker.Acquire(ctx, "payout", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held with one master down")
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}

	servers[1].Stop()
	_, err = locker.Acquire(ctx, "payout", lock.Options{Wait: 300 * time.Millisecond})
	fmt.Println("two masters down, not obtained:", errors.Is(err, lock.ErrNotObtained))
	// Output:
	// held with one master down
	// two masters down, not obtained: true
}

// Redlock with fencing tokens: each acquisition carries a token larger than any before it on the
// key, kept on the masters. The protected store must refuse a write whose token is older than
// the newest it has accepted (here a map stands in for it).
func ExampleWithFencingTokens() {
	masters, _, stop := exampleRedis(3)
	defer stop()
	ctx := context.Background()

	locker, err := lock.NewRedlock(masters, lock.WithLease(2*time.Second), lock.WithFencingTokens())
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	newest := int64(0)
	write := func(token int64) string {
		if token < newest {
			return "rejected"
		}
		newest = token
		return "accepted"
	}
	first, err := locker.Acquire(ctx, "ledger", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	old := first.Token()
	_ = first.Release(ctx)
	second, err := locker.Acquire(ctx, "ledger", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer second.Release(ctx)
	fmt.Println("second token larger:", second.Token() > old)
	fmt.Println("second holder writes:", write(second.Token()))
	fmt.Println("a late write with the first token:", write(old))
	// Output:
	// second token larger: true
	// second holder writes: accepted
	// a late write with the first token: rejected
}

// A fenced lock in Redisson RFencedLock's layout: the lock is RLock's hash, and the token comes
// from the counter a Java RFencedLock on the same name raises, so both sides fence with one
// sequence.
func ExampleWithRFencedLockLayout() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	rdb := clients[0]
	ctx := context.Background()

	locker, err := lock.NewFenced(rdb, lock.WithRFencedLockLayout())
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	le, err := locker.Acquire(ctx, "payments", lock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lock:", rdb.Type(ctx, "payments").Val())
	fmt.Println("token:", le.Token(), "counter:", rdb.Get(ctx, "redisson_lock_token:{payments}").Val())
	if err := le.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// lock: hash
	// token: 1 counter: 1
}
