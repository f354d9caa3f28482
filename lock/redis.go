// Redis helpers every kind uses: scripts run on a pipeline or the client, addresses, globs.

package lock

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock/lockutil"
)

// clientAddr and globEscape are lockutil's, the one copy, which the programs around the locks share too.
var (
	clientAddr = lockutil.Addr
	globEscape = lockutil.GlobEscape
)

// runScript runs a release script on rdb, after p, the holder's pipeline of last commands, when
// there is one (nil: the script alone). On a client that sends a pipeline on one connection, in
// order (a plain or Sentinel-managed one), the script joins the end of p: one round trip, and
// Redis runs the holder's commands first. A Cluster or Ring client splits a pipeline by server,
// so there p is executed first and the script follows on its own; so does a script Redis does not
// know yet (NOSCRIPT: EVALSHA in a pipeline cannot fall back to EVAL).
func runScript(ctx context.Context, p redis.Pipeliner, rdb redis.UniversalClient, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	if _, oneConn := rdb.(*redis.Client); p == nil || !oneConn {
		execHeld(ctx, p)
		return sc.Run(ctx, rdb, keys, args...)
	}
	cmd := sc.EvalSha(ctx, p, keys, args...)
	execHeld(ctx, p)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return sc.Run(ctx, rdb, keys, args...)
	}
	return cmd
}

// execHeld executes the holder's pipeline p, if there is one. Each command carries its own
// error, for the holder to read.
func execHeld(ctx context.Context, p redis.Pipeliner) {
	if p != nil {
		_, _ = p.Exec(ctx)
	}
}
