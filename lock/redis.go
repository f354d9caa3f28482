// Redis helpers every kind uses: scripts run on a pipeline or the client, addresses, globs.

package lock

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock/lockutil"
	"github.com/seckill-lab/seckill/lock/script"
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
func runScript(ctx context.Context, p redis.Pipeliner, rdb redis.UniversalClient, sc *redis.Script, c script.Call) *redis.Cmd {
	s := newScriptCall(sc, c.Keys)
	return s.run(ctx, p, rdb, append(s.args(len(c.Args)), c.Args...))
}

// execHeld executes the holder's pipeline p, if there is one. Each command carries its own
// error, for the holder to read.
func execHeld(ctx context.Context, p redis.Pipeliner) {
	if p != nil {
		_, _ = p.Exec(ctx)
	}
}

// scriptCall is one script on one set of keys, with the head of its EVALSHA (the command, the
// script's SHA, the key count and the keys) boxed once: go-redis's Script.Run boxes each of them
// again on every call, and a sale runs two scripts.
type scriptCall struct {
	sc   *redis.Script
	keys []string
	head []any
}

func newScriptCall(sc *redis.Script, keys []string) scriptCall {
	head := append(make([]any, 0, 3+len(keys)), "evalsha", sc.Hash(), len(keys))
	for _, k := range keys {
		head = append(head, k)
	}
	return scriptCall{sc: sc, keys: keys, head: head}
}

// args is a new command: the head, with room for n arguments to append.
func (s scriptCall) args(n int) []any {
	return append(make([]any, 0, len(s.head)+n), s.head...)
}

// run sends cmd (s.args with the arguments appended) by runScript's rule: after p, or at its end
// on a client that sends a pipeline on one connection; a script Redis does not know is sent whole.
func (s scriptCall) run(ctx context.Context, p redis.Pipeliner, rdb redis.UniversalClient, cmd []any) *redis.Cmd {
	c := redis.NewCmd(ctx, cmd...)
	if len(s.keys) > 0 {
		c.SetFirstKeyPos(3)
	}
	if _, oneConn := rdb.(*redis.Client); p != nil && oneConn {
		_ = p.Process(ctx, c)
		execHeld(ctx, p)
	} else {
		execHeld(ctx, p)
		_ = rdb.Process(ctx, c)
	}
	if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return s.sc.Eval(ctx, rdb, s.keys, cmd[len(s.head):]...)
	}
	return c
}
