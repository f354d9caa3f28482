package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill-lab/seckill/lock"
	"github.com/seckill-lab/seckill/testkit/locktest"
)

// TestWrongPasswordIsUnavailable: a server that answers but will not serve (a password this
// client does not have) is ErrUnavailable, as one that does not answer, not a plain error.
func TestWrongPasswordIsUnavailable(t *testing.T) {
	t.Parallel()
	s := locktest.New(t)
	if err := s.RequirePass("not-yours"); err != nil {
		t.Fatal(err)
	}
	c2 := s.Client() // a new connection: the server asks it for the password
	defer c2.Close()
	l2, err := lock.NewReentrant(c2)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.Acquire(context.Background(), "wrongpass", lock.Options{}); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire without the password: %v, want ErrUnavailable", err)
	}
}
