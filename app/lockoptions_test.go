package app_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/app"
	"seckill/config"
	"seckill/internal/modes"
)

// TestLockOptions: lock.* left at zero gives the library's defaults, and every setting reaches
// every lock mode's constructor, each taking what it honours (none refuses the list).
func TestLockOptions(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	log := slog.New(slog.DiscardHandler)
	masters := []redis.UniversalClient{c, c, c}
	for _, tc := range []struct {
		name  string
		cfg   config.Lock
		lease time.Duration
	}{
		{"defaults", config.Lock{SubscriptionMode: "auto", FencedLayout: "line"}, (*lock.Locker)(nil).DefaultLease()},
		{"every setting", config.Lock{Lease: 2 * time.Second, WaitReplicas: 1, SubscriptionMode: "classic",
			FairThreadWait: time.Minute, FencedLayout: "redisson"}, 2 * time.Second},
	} {
		reg, err := modes.NewRegistry(modes.Deps{Data: c, Masters: masters, InstanceID: "inst", Options: app.LockOptions(tc.cfg, log)})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := reg.Lease(); got != tc.lease {
			t.Errorf("%s: lease %s, want %s", tc.name, got, tc.lease)
		}
		_ = reg.Close()
		// The checkout semaphore (checkout.limit) is given the same list.
		sem, err := lock.NewExpirableSemaphore(c, app.LockOptions(tc.cfg, log)...)
		if err != nil {
			t.Fatalf("%s: the checkout semaphore: %v", tc.name, err)
		}
		_ = sem.Close()
	}
}
