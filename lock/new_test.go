package lock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"
)

// TestConstructorsRefuseBadOptions: no client, or an option out of range, is an error that names
// the mode and the problem; nothing is built.
func TestConstructorsRefuseBadOptions(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	masters := []redis.UniversalClient{c, c, c}
	for _, tc := range []struct {
		name string
		new  func() (*lock.Locker, error)
		want string
	}{
		{"lua without a client", func() (*lock.Locker, error) { return lock.NewLua(nil) }, "lua: lock: redis unavailable: no Redis client"},
		{"redlock without masters", func() (*lock.Locker, error) { return lock.NewRedlock(nil) }, "redlock: lock: redis unavailable"},
		{"multilock without masters", func() (*lock.Locker, error) { return lock.NewMultilock(nil) }, "multilock: lock: redis unavailable"},
		{"zero lease", func() (*lock.Locker, error) { return lock.NewReentrant(c, lock.WithLease(0)) }, "reentrant: lease 0s"},
		{"drift too large", func() (*lock.Locker, error) { return lock.NewRedlock(masters, lock.WithDriftFactor(0.6)) }, "drift factor 0.6"},
		{"retry min above max", func() (*lock.Locker, error) {
			return lock.NewMultilock(masters, lock.WithRetryDelay(time.Second, time.Millisecond))
		}, "retry delay 1s..1ms"},
	} {
		l, err := tc.new()
		if err == nil || l != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: locker %v, err %v; want no locker and an error containing %q", tc.name, l, err, tc.want)
		}
	}
	if _, err := lock.NewLua(nil); !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("no client: %v, want ErrUnavailable", err)
	}
	l, err := lock.NewFenced(c, lock.WithLease(time.Second), lock.WithInstanceID("x"))
	if err != nil || l == nil {
		t.Fatalf("good options: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
