package bench

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// commandCounter is a go-redis hook that counts the commands the bench's own clients send (the
// data client and the master clients Run creates, and everything built on them: the lock
// modes, the store, redsync's pools, redislock). It counts on the client side, so it reads the
// same on a real redis-server and on the in-process miniredis (which has neither CONFIG
// RESETSTAT nor INFO commandstats):
//
//   - one command sent counts 1, whatever it is: a script call (EVALSHA, or EVAL after a
//     NOSCRIPT) counts once, not the commands it runs inside Redis;
//   - a pipeline or a MULTI/EXEC transaction counts every command in it (MULTI and EXEC
//     included);
//   - go-redis's setup of a newly dialled connection (HELLO, CLIENT SETINFO, CLIENT
//     MAINT_NOTIFICATIONS, AUTH, SELECT) passes through the hook too but is left out: it is not
//     the sale's traffic, and how many connections a pool dials depends on timing (the bench
//     sends none of these commands itself);
//   - SUBSCRIBE and the messages on a pub/sub connection are not seen (go-redis sends them
//     outside the hooks); PUBLISH is.
//
// It is reset per cell round (swap) and read right after the round's buyers stop, before the
// bench's own INFO and audit commands.
type commandCounter struct {
	n atomic.Int64
}

var _ redis.Hook = (*commandCounter)(nil)

// DialHook passes dialling through unchanged.
func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook counts one command.
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connSetup(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts every command of a pipeline (or transaction).
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var n int64
		for _, cmd := range cmds {
			if !connSetup(cmd) {
				n++
			}
		}
		c.n.Add(n)
		return next(ctx, cmds)
	}
}

// connSetup reports whether cmd is one go-redis sends to set up a new connection.
func connSetup(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

// reset zeroes the count and returns what it was.
func (c *commandCounter) reset() int64 { return c.n.Swap(0) }

// load is the count since the last reset.
func (c *commandCounter) load() int64 { return c.n.Load() }
