package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/seckill-lab/seckill/lock"
)

// A compare-and-delete lock has no watchdog: a holder whose work may outlast the lease refreshes
// it by hand, and a release by a holder whose lease ran out deletes nothing.
func ExampleNewLua() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	rdb := clients[0]
	ctx := context.Background()

	locker, err := lock.NewLua(rdb, lock.WithLease(300*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "nightly-export", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 { // work three leases long, refreshing halfway through each
		time.Sleep(150 * time.Millisecond)
		if err := lease.Refresh(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("still held after three leases:", rdb.Exists(ctx, "nightly-export").Val() == 1)
	fmt.Println("released:", lease.Release(ctx) == nil)

	// Without refreshing, the lease runs out and the next holder takes the lock.
	late, err := locker.Acquire(ctx, "nightly-export", lock.Options{Lease: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	next, err := locker.Acquire(ctx, "nightly-export", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("late release:", errors.Is(late.Release(ctx), lock.ErrNotHeld))
	fmt.Println("late refresh:", errors.Is(late.Refresh(ctx), lock.ErrNotHeld))
	fmt.Println("the next holder still holds it:", rdb.Exists(ctx, "nightly-export").Val() == 1)
	_ = next.Release(ctx)
	// Output:
	// still held after three leases: true
	// released: true
	// late release: true
	// late refresh: true
	// the next holder still holds it: true
}

// A fair lock serves waiters in the order they came, whichever process they wait in: here two
// Lockers stand for two processes.
func ExampleNewFair() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	ctx := context.Background()

	var lockers []*lock.Locker
	for _, id := range []string{"process-a", "process-b"} {
		l, err := lock.NewFair(clients[0], lock.WithInstanceID(id))
		if err != nil {
			log.Fatal(err)
		}
		defer l.Close()
		lockers = append(lockers, l)
	}
	first, err := lockers[0].Acquire(ctx, "payroll", lock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan string, 3)
	queue := func(l *lock.Locker, who string) {
		lease, err := l.Acquire(ctx, "payroll", lock.Options{Wait: 5 * time.Second})
		if err != nil {
			served <- who + ": " + err.Error()
			return
		}
		served <- who
		_ = lease.Release(ctx)
	}
	for i, who := range []string{"b-1", "a-1", "b-2"} {
		go queue(lockers[(i+1)%2], who)
		time.Sleep(50 * time.Millisecond) // let each join the queue before the next
	}
	if err := first.Release(ctx); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		fmt.Println("served:", <-served)
	}
	// Output:
	// served: b-1
	// served: a-1
	// served: b-2
}

// A multilock holds one lock on each of several independent Redis servers, all of them
// required; its lease has a part per server.
func ExampleNewMultilock() {
	masters, _, stop := exampleRedis(3)
	defer stop()
	ctx := context.Background()

	locker, err := lock.NewMultilock(masters, lock.WithInstanceID("worker-1"))
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	lease, err := locker.Acquire(ctx, "ledger", lock.Options{Owner: "close-books", Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for i, part := range lease.Parts() {
		fmt.Printf("master %d: %s holds %s\n", i+1, part.Field(), masters[i].HGet(ctx, "ledger", part.Field()).Val())
	}
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	left := 0
	for _, m := range masters {
		left += int(m.Exists(ctx, "ledger").Val())
	}
	fmt.Println("keys left:", left)
	// Output:
	// master 1: worker-1:close-books holds 1
	// master 2: worker-1:close-books holds 1
	// master 3: worker-1:close-books holds 1
	// keys left: 0
}

// The holder's last write and the release in one round trip: the release goes at the end of the
// holder's pipeline, so Redis runs the write first and the next holder sees it.
func ExampleLease_ReleaseAfter() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	rdb := clients[0]
	ctx := context.Background()

	locker, err := lock.NewFenced(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "{stock}:lock", lock.Options{Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	left := rdb.Get(ctx, "{stock}:count").Val()
	p := rdb.Pipeline()
	write := p.Set(ctx, "{stock}:count", left+"x", 0) // the holder's write, not sent yet
	if err := lease.ReleaseAfter(ctx, p); err != nil {
		log.Fatal(err)
	}
	fmt.Println("written:", write.Err() == nil)
	fmt.Println("lock free:", rdb.Exists(ctx, "{stock}:lock").Val() == 0)
	// Output:
	// written: true
	// lock free: true
}

// A stock page reads under the read side while a restock writes under the write side: readers
// share, the writer may read too (a downgrade), and a reader asking to write is refused at once.
func ExampleNewReadWrite() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	rdb := clients[0]
	ctx := context.Background()

	read, write, err := lock.NewReadWrite(rdb, lock.WithInstanceID("worker-1"))
	if err != nil {
		log.Fatal(err)
	}
	defer read.Close()
	defer write.Close()

	var readers []*lock.Lease
	for _, page := range []string{"page-1", "page-2"} {
		le, err := read.Acquire(ctx, "stock", lock.Options{Owner: page})
		if err != nil {
			log.Fatal(err)
		}
		readers = append(readers, le)
	}
	fmt.Println("two readers:", rdb.HGet(ctx, "stock", "mode").Val())
	_, err = write.Acquire(ctx, "stock", lock.Options{Owner: "restock"})
	fmt.Println("a writer meanwhile:", errors.Is(err, lock.ErrNotObtained))
	_, err = write.Acquire(ctx, "stock", lock.Options{Owner: "page-1", Wait: time.Minute})
	fmt.Println("a reader asking to write:", errors.Is(err, lock.ErrUpgrade))
	for _, le := range readers {
		if err := le.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}

	w, err := write.Acquire(ctx, "stock", lock.Options{Owner: "restock", Wait: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	r, err := read.Acquire(ctx, "stock", lock.Options{Owner: "restock"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the writer reads too:", r.Field())
	for _, le := range []*lock.Lease{w, r} {
		if err := le.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// two readers: read
	// a writer meanwhile: true
	// a reader asking to write: true
	// the writer reads too: worker-1:restock
}

// At most two payment calls at once, across every process that shares the Redis: a third caller
// waits until a permit is given back. The permits belong to nobody: a holder that dies keeps its
// permit for good (NewExpirableSemaphore's come back).
func ExampleNewSemaphore() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	ctx := context.Background()

	sem, err := lock.NewSemaphore(clients[0])
	if err != nil {
		log.Fatal(err)
	}
	defer sem.Close()

	set, err := sem.TrySetPermits(ctx, "payment-calls", 2)
	if err != nil {
		log.Fatal(err)
	}
	again, _ := sem.TrySetPermits(ctx, "payment-calls", 5)
	fmt.Println("set:", set, "set again:", again)
	for range 2 {
		if err := sem.Acquire(ctx, "payment-calls", 1, 0); err != nil {
			log.Fatal(err)
		}
	}
	left, _ := sem.AvailablePermits(ctx, "payment-calls")
	fmt.Println("available:", left)
	ok, _ := sem.TryAcquire(ctx, "payment-calls", 1)
	fmt.Println("a third at once:", ok)

	taken := make(chan error, 1)
	go func() { taken <- sem.Acquire(ctx, "payment-calls", 1, 5*time.Second) }()
	if err := sem.Release(ctx, "payment-calls", 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the third after a release:", <-taken == nil)
	if err := sem.Release(ctx, "payment-calls", 2); err != nil {
		log.Fatal(err)
	}
	// Output:
	// set: true set again: false
	// available: 0
	// a third at once: false
	// the third after a release: true
}

// At most one export per region: each permit has an id and a lease, is renewed by a watchdog
// while held, and comes back on its own when its lease ends unrenewed (its holder died, or took
// it with a lease of its own and never refreshed it).
func ExampleNewExpirableSemaphore() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	ctx := context.Background()

	sem, err := lock.NewExpirableSemaphore(clients[0], lock.WithLease(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sem.Close()
	if _, err := sem.TrySetPermits(ctx, "export-eu", 1); err != nil {
		log.Fatal(err)
	}

	watched, err := sem.Acquire(ctx, "export-eu", 0, 0) // lease 0: the watchdog renews it
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("id:", len(watched.ID()), "hex digits")
	_, err = sem.TryAcquire(ctx, "export-eu", 0)
	fmt.Println("a second meanwhile:", errors.Is(err, lock.ErrNotObtained))
	fmt.Println("released:", watched.Release(ctx) == nil)
	fmt.Println("released twice:", errors.Is(watched.Release(ctx), lock.ErrNotHeld))

	// A permit with a lease of its own that is never refreshed: it comes back when the lease ends,
	// and the waiter wakes then, with no release.
	short, err := sem.Acquire(ctx, "export-eu", 0, 200*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	next, err := sem.Acquire(ctx, "export-eu", 5*time.Second, 0)
	if err != nil {
		log.Fatal(err)
	}
	<-short.Lost()
	fmt.Println("the expired permit lost; its release:", errors.Is(short.Release(ctx), lock.ErrNotHeld))
	fmt.Println("the next holder's permit:", next.Release(ctx) == nil)
	// Output:
	// id: 32 hex digits
	// a second meanwhile: true
	// released: true
	// released twice: true
	// the expired permit lost; its release: true
	// the next holder's permit: true
}
