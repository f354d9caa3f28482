package lab_test

import (
	"testing"

	"seckill/internal/testredis"
)

// TestMain runs up to 4 of the parallel tests at once (GOMAXPROCS otherwise, 2 on a small
// machine): the whole-lab runs, row 12's Sentinel failover and the goroutine count, each on
// servers of its own, mostly wait on leases and servers, and a row the machine starved is run
// again, not failed.
func TestMain(m *testing.M) { testredis.RunParallel(m, 4) }
