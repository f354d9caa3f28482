package service_test

import (
	"testing"

	"seckill/internal/testredis"
)

// The scenario tests wait on leases and TTLs far more than they compute: run several at once.
func TestMain(m *testing.M) { testredis.RunParallel(m, 4) }
