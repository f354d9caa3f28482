// Command lockconsumer is a module of its own that uses the lock library as another team would:
// it holds a reentrant (Redisson-compatible) lock around a job three leases long against a real
// Redis, and checks that the watchdog kept the lock the whole time, that a second holder was kept
// out, and that the release left nothing behind. It imports only the library and go-redis.
//
// The library is not published yet: go.mod points it at this checkout's lock/ with a replace
// directive. Run it from the repository's root with GOWORK=off, since the root's go.work would
// otherwise take the directory over as part of the seckill module:
//
//	cd examples/consumer && GOWORK=off go run . -addr 127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "the Redis server")
	lease := flag.Duration("lease", time.Second, "the lock's lease (the watchdog renews it every lease/3)")
	key := flag.String("key", "examples:consumer", "the lock's key")
	flag.Parse()
	if err := run(*addr, *key, *lease); err != nil {
		fmt.Fprintln(os.Stderr, "lockconsumer:", err)
		os.Exit(1)
	}
}

func run(addr, key string, lease time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*lease+10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("no Redis at %s: %w", addr, err)
	}

	worker, err := lock.NewReentrant(rdb, lock.WithLease(lease), lock.WithInstanceID("example-worker"))
	if err != nil {
		return err
	}
	defer worker.Close()
	rival, err := lock.NewReentrant(rdb, lock.WithLease(lease), lock.WithInstanceID("example-rival"))
	if err != nil {
		return err
	}
	defer rival.Close()

	held, err := worker.Acquire(ctx, key, lock.Options{Owner: "job-1", Wait: lease})
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	fmt.Printf("acquired %s with a %s lease; the job takes %s\n", key, lease, 3*lease)

	// The job: three leases long. Every lease/2 look at the lock from outside.
	job := time.NewTimer(3 * lease)
	tick := time.NewTicker(lease / 2)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-held.Lost():
			return errors.New("the watchdog lost the lock while the job ran")
		case <-tick.C:
			ttl, err := rdb.PTTL(ctx, key).Result()
			if err != nil {
				return fmt.Errorf("PTTL: %w", err)
			}
			if ttl <= 0 {
				return fmt.Errorf("the lock has no TTL left (%s) while held", ttl)
			}
			if _, err := rival.Acquire(ctx, key, lock.Options{Owner: "job-2"}); !errors.Is(err, lock.ErrNotObtained) {
				return fmt.Errorf("a rival's attempt while held: %v, want lock.ErrNotObtained", err)
			}
			fmt.Printf("  held, %s left of the lease, a rival is kept out\n", ttl.Round(time.Millisecond))
		case <-job.C:
			done = true
		}
	}

	if err := held.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		return fmt.Errorf("the key is still there after the release")
	}
	next, err := rival.Acquire(ctx, key, lock.Options{Owner: "job-2", Wait: lease})
	if err != nil {
		return fmt.Errorf("the rival after the release: %w", err)
	}
	if err := next.Release(ctx); err != nil {
		return err
	}
	fmt.Println("released after three leases; the rival got it next: ok")
	return nil
}
