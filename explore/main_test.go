package explore

import (
	"testing"

	"seckill/internal/testredis"
)

// TestMain runs up to 4 of the parallel tests at once (GOMAXPROCS otherwise, 2 on a small
// machine): the three modes of TestExploreFindsTheCheapestModesPattern, each on a rig of its
// own, and the faults' test mostly wait on their sections and leases, not on the CPU.
func TestMain(m *testing.M) { testredis.RunParallel(m, 4) }
