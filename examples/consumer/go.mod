module example.com/lockconsumer

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/seckill-lab/seckill/lock v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-redsync/redsync/v4 v4.18.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// Until the library is published, point it at a checkout (CI rewrites this path to its own).
replace github.com/seckill-lab/seckill/lock => ../../lock

// The library's tests import its test helpers, a module of their own; go mod tidy reads the tests
// of the modules it needs, so it wants this one found too.
replace github.com/seckill-lab/seckill/testkit => ../../testkit
