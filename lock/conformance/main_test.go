package conformance

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/lock/locktest"
)

// The conformance suite (every clause of docs/library.md's contract over every kind of lock) and
// the tests built on its kinds, in a test binary of their own: `go test ./lock/...` then runs it
// beside the library's other tests instead of after them.

// parallelTests is how many of this package's tests run at once unless -test.parallel says
// otherwise: they mostly wait (on leases, TTLs, servers starting), each on servers of its own.
const parallelTests = 8

// parallelEmbedded is the same on in-process servers (no redis-server installed, or
// LOCKTEST_REDIS=embedded): a test there costs little CPU (no process to start), and twice as
// many at once halve the package's time without making the machine any busier. Not under the
// race detector (raceDetector), which makes them costly again: a single attempt on three
// in-process masters went without an answer for 350 ms there.
const parallelEmbedded = 16

// raceDetector is set when the tests are built with -race (race_test.go).
var raceDetector bool

func TestMain(m *testing.M) {
	n := parallelTests
	if !locktest.UseReal() && !raceDetector {
		n = parallelEmbedded
	}
	locktest.RunParallel(m, n)
}

// long reports whether the long, stability-minded repetitions are asked for (LOCKTEST_LONG=1,
// which CI sets).
func long() bool {
	v := os.Getenv("LOCKTEST_LONG")
	return v != "" && v != "0"
}
