package handler_test

import (
	"testing"

	"seckill/internal/testredis"
)

// The tests wait on leases and servers far more than they compute: run several at once.
func TestMain(m *testing.M) { testredis.RunParallel(m, 4) }
