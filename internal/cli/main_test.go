package cli

import (
	"testing"

	"seckill/internal/testredis"
)

// TestMain runs up to 4 of the parallel tests at once (GOMAXPROCS otherwise, 2 on a small
// machine): the explorer's, the bench's and the simulator's commands, each on servers of its own,
// mostly wait on their runs' durations.
func TestMain(m *testing.M) { testredis.RunParallel(m, 4) }
