package lock

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// parallelTests is how many of this package's tests run at once under the race detector unless
// -test.parallel says otherwise: they mostly wait (on leases, TTLs, servers starting), each on
// servers of its own, so more than GOMAXPROCS of them fit on a small machine. Redlock's tests stay serial (they run
// first, alone): a one-attempt acquisition with a short TTL gives each master a few milliseconds
// to answer, which a busy machine under -race does not always keep.
const parallelTests = 12

// parallelFast is the same without the race detector (locktest.RunParallelOnServers).
const parallelFast = 16

func TestMain(m *testing.M) { locktest.RunParallelOnServers(m, parallelTests, parallelFast) }

// universal wraps clients as the UniversalClient interface the constructors take.
func universal(cs ...*redis.Client) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// newNamed builds the lock called name (the name its constructor and the service's mode go
// by: lua, reentrant, fair, fenced, multilock, redlock, redlock-fenced) through the public
// constructors: the single-server locks on data, the others on masters.
func newNamed(name string, data redis.UniversalClient, masters []redis.UniversalClient, opts ...Option) (*Locker, error) {
	switch name {
	case "lua":
		return NewLua(data, opts...)
	case "reentrant":
		return NewReentrant(data, opts...)
	case "fair":
		return NewFair(data, opts...)
	case "fenced":
		return NewFenced(data, opts...)
	case "multilock":
		return NewMultilock(masters, opts...)
	case "redlock":
		return NewRedlock(masters, opts...)
	case "redlock-fenced":
		return NewRedlock(masters, append(slices.Clone(opts), WithFencingTokens())...)
	}
	return nil, fmt.Errorf("no lock named %q", name)
}

// own is owner for a Locker that honours Options.Owner, "" for one that has no re-entry.
func own(l *Locker, owner string) string {
	if l.Reentrant() {
		return owner
	}
	return ""
}

// Universal, for the tests of package lock_test.
var Universal = universal
