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

// TestOptionalOptions: a constructor leaves out an option given as Optional that it does not
// honour (where it refuses it given plainly), and takes one it honours.
func TestOptionalOptions(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	if _, err := lock.NewLua(c, lock.WithThreadWait(time.Second)); err == nil || !strings.Contains(err.Error(), "WithThreadWait does not apply to NewLua") {
		t.Errorf("plain WithThreadWait on NewLua: %v, want refused", err)
	}
	config := []lock.Option{
		lock.WithLease(2 * time.Second).Optional(), lock.WithThreadWait(time.Second).Optional(),
		lock.WithShardedPubSub(false).Optional(), lock.WithRFencedLockLayout().Optional(),
		lock.WithReplicas(1, 0).Optional(), lock.WithRetryDelay(time.Millisecond, 2*time.Millisecond).Optional(),
	}
	for _, tc := range []struct {
		name      string
		new       func(...lock.Option) (*lock.Locker, error)
		reentrant bool
	}{
		{"lua", func(o ...lock.Option) (*lock.Locker, error) { return lock.NewLua(c, o...) }, false},
		{"reentrant", func(o ...lock.Option) (*lock.Locker, error) { return lock.NewReentrant(c, o...) }, true},
		{"fair", func(o ...lock.Option) (*lock.Locker, error) { return lock.NewFair(c, o...) }, true},
		// The layout is taken: the lock keeps owners, as RFencedLock does.
		{"fenced", func(o ...lock.Option) (*lock.Locker, error) { return lock.NewFenced(c, o...) }, true},
		{"multilock", func(o ...lock.Option) (*lock.Locker, error) {
			return lock.NewMultilock([]redis.UniversalClient{c, c}, o...)
		}, true},
		{"redlock", func(o ...lock.Option) (*lock.Locker, error) {
			return lock.NewRedlock([]redis.UniversalClient{c, c, c}, o...)
		}, false},
	} {
		l, err := tc.new(config...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := l.DefaultLease(); got != 2*time.Second {
			t.Errorf("%s: default lease %s, want the optional WithLease's 2s", tc.name, got)
		}
		if l.Reentrant() != tc.reentrant {
			t.Errorf("%s: Reentrant() = %v, want %v", tc.name, l.Reentrant(), tc.reentrant)
		}
		_ = l.Close()
	}
	if _, err := lock.NewRedlock([]redis.UniversalClient{c, c, c}, lock.WithDriftFactor(0.7).Optional()); err == nil {
		t.Error("an optional option out of range: built, want refused")
	}
}
