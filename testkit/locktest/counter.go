package locktest

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Counter counts the commands its clients send, through a go-redis hook: a pipeline counts each
// command in it, a script call counts once (as EVALSHA, or EVAL). Counting on the client side works
// the same on a real redis-server and on the in-process one (which has no INFO commandstats).
type Counter struct {
	mu      sync.Mutex
	byName  map[string]int64
	scripts map[string]int64 // runs by the script's SHA1
	trips   int64
}

// Count installs a counting hook on every client and returns the counter. A client keeps the hook
// until it is closed, so count only on a test's own clients.
func Count(cs ...*redis.Client) *Counter {
	c := &Counter{byName: map[string]int64{}, scripts: map[string]int64{}}
	for _, cl := range cs {
		cl.AddHook(counterHook{c})
	}
	return c
}

// Load is the number of commands sent since the last Reset.
func (c *Counter) Load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.byName {
		n += v
	}
	return n
}

// Of is the number of commands with one of these names (lower case, e.g. "evalsha") sent since
// the last Reset.
func (c *Counter) Of(names ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, name := range names {
		n += c.byName[name]
	}
	return n
}

// RoundTrips is the number of round trips since the last Reset: each command sent alone and
// each pipeline counts one. A new connection's set-up (HELLO, CLIENT, AUTH, SELECT, alone or in
// a pipeline of its own) is left out: how many connections a pool dials depends on timing.
func (c *Counter) RoundTrips() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

// Script is the number of runs of the script with source src (EVAL or EVALSHA) since the last
// Reset: a test can leave out a script that runs on a timer of its own (a heartbeat).
func (c *Counter) Script(src string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scripts[redis.NewScript(src).Hash()]
}

// Reset starts counting from zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byName)
	clear(c.scripts)
	c.trips = 0
}

func (c *Counter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	setupOnly := true
	for _, cmd := range cmds {
		c.byName[cmd.Name()]++
		if args := cmd.Args(); (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(args) > 1 {
			src, _ := args[1].(string)
			if cmd.Name() == "eval" {
				src = redis.NewScript(src).Hash()
			}
			c.scripts[src]++
		}
		switch cmd.Name() {
		case "hello", "client", "auth", "select":
		default:
			setupOnly = false
		}
	}
	if !setupOnly {
		c.trips++
	}
}

type counterHook struct{ c *Counter }

func (h counterHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h counterHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.add(cmd)
		return next(ctx, cmd)
	}
}

func (h counterHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.add(cmds...)
		return next(ctx, cmds)
	}
}
