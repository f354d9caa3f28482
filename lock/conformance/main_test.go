package conformance

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/testkit/locktest"
)

// The conformance suite (every clause of docs/library.md's contract over every kind of lock) and
// the tests built on its kinds, in a test binary of their own: `go test ./lock/...` then runs it
// beside the library's other tests instead of after them.

// parallelTests is how many of this package's tests run at once under the race detector unless
// -test.parallel says otherwise: they mostly wait (on leases, TTLs, servers starting), each on
// servers of its own.
const parallelTests = 12

// parallelFast is the same without the race detector (locktest.RunParallelOnServers): 24 took
// the package from 20.5 s to 11 s on real servers on this 2-core machine.
const parallelFast = 24

func TestMain(m *testing.M) { locktest.RunParallelOnServers(m, parallelTests, parallelFast) }

// long reports whether the long, stability-minded repetitions are asked for (LOCKTEST_LONG=1,
// which CI sets).
func long() bool {
	v := os.Getenv("LOCKTEST_LONG")
	return v != "" && v != "0"
}
