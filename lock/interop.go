package lock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/script"
)

// What keeps the reentrant, fair and fenced locks in step with Redisson on every topology: the choice
// between classic and sharded pub/sub, and the fair lock's thread wait.
//
// On a Redis 7 cluster Redisson (shardedSubscriptionMode AUTO) waits with SSUBSCRIBE and
// announces with SPUBLISH. A sharded message is seen only by the sharded subscribers of the
// channel's shard, and a classic one only by classic subscribers: a process that announces one
// way while the other listens the other way wakes nobody, and its waiters sleep out the holder's
// TTL. So both sides must choose alike, which auto does: sharded exactly when the client is a
// cluster client and the server knows PUBSUB SHARDNUMSUB (Redis 7 and later), as Redisson does.

// subMode is the pub/sub the reentrant and fair locks use (WithShardedPubSub).
type subMode int

const (
	subAuto    subMode = iota // sharded on a Redis 7+ cluster, classic elsewhere
	subClassic                // PUBLISH / SUBSCRIBE, PSUBSCRIBE
	subSharded                // SPUBLISH / SSUBSCRIBE
)

// pubsubMode decides, once per Locker, whether its pub/sub is sharded.
type pubsubMode struct {
	rdb   redis.UniversalClient
	force subMode

	mu      sync.Mutex
	decided bool
	sharded bool
}

func newPubsubMode(rdb redis.UniversalClient, force subMode) *pubsubMode {
	return &pubsubMode{rdb: rdb, force: force}
}

// useSharded reports whether releases are announced with SPUBLISH and waited for with
// SSUBSCRIBE. In auto mode it asks a cluster once whether it knows sharded pub/sub; a server
// that does not answer leaves the question open (classic meanwhile), one that refuses the command
// (before Redis 7) settles it: classic.
func (m *pubsubMode) useSharded(ctx context.Context) bool {
	if m == nil {
		return false
	}
	switch m.force {
	case subClassic:
		return false
	case subSharded:
		return true
	}
	cc, ok := m.rdb.(*redis.ClusterClient)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.decided {
		return m.sharded
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := cc.Do(cctx, "pubsub", "shardnumsub").Err()
	var rerr redis.Error
	switch {
	case err == nil:
		m.decided, m.sharded = true, true
	case errors.As(err, &rerr):
		m.decided, m.sharded = true, false
	}
	return m.sharded
}

// script is the script named name (lock/script's Sources), in its sharded build (SPUBLISH in
// place of PUBLISH) when the pub/sub is sharded and it announces.
func (m *pubsubMode) script(ctx context.Context, name string) *redis.Script {
	s := scripts[name]
	if s.sharded != nil && m.useSharded(ctx) {
		return s.sharded
	}
	return s.classic
}

// run sends c on s, in the build script picks.
func (m *pubsubMode) run(ctx context.Context, s redis.Scripter, c script.Call) *redis.Cmd {
	return m.script(ctx, c.Script).Run(ctx, s, c.Keys, c.Args...)
}

// scriptPair is a script as package lock sends it, with its sharded build when it announces a
// release or permits given back (the same Lua file with SPUBLISH in place of PUBLISH: the
// channel shares the lock's hash tag, so it is in the script's slot), as Redisson writes the
// publish command its subscription service names into its scripts.
type scriptPair struct{ classic, sharded *redis.Script }

// scripts are every script by name.
var scripts = func() map[string]scriptPair {
	m := map[string]scriptPair{}
	sharded := script.ShardedSources()
	for name, src := range script.Sources() {
		p := scriptPair{classic: redis.NewScript(src)}
		if s, ok := sharded[name]; ok {
			p.sharded = redis.NewScript(s)
		}
		m[name] = p
	}
	return m
}()

// classicMode is the mode of the scripts that announce nothing: none, always classic.
var classicMode *pubsubMode

// classic is the script named name, in its classic build.
func classic(name string) *redis.Script { return scripts[name].classic }

// run sends c on s (a client, a connection or a master), in its classic build: for the scripts
// that announce nothing, or where the pub/sub cannot be sharded.
func run(ctx context.Context, s redis.Scripter, c script.Call) *redis.Cmd {
	return classic(c.Script).Run(ctx, s, c.Keys, c.Args...)
}
