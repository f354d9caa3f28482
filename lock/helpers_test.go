package lock

import (
	"os"

	"github.com/redis/go-redis/v9"
)

// universal wraps clients as the UniversalClient interface the constructors take.
func universal(cs ...*redis.Client) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// long reports whether the long, stability-minded repetitions are asked for (LOCKTEST_LONG=1,
// which CI sets). By default every behaviour is still checked, once.
func long() bool {
	v := os.Getenv("LOCKTEST_LONG")
	return v != "" && v != "0"
}

// Universal and Long, for the tests of package lock_test.
var (
	Universal = universal
	Long      = long
)
