module github.com/seckill-lab/seckill/lock

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.0
	github.com/google/uuid v1.6.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/yuin/gopher-lua v1.1.1
)

// Test helpers only (servers to start, faults to inject): a module of their own, so that nothing
// the library ships carries them.
require github.com/seckill-lab/seckill/testkit v0.0.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/seckill-lab/seckill/testkit => ../testkit
