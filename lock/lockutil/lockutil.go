// Package lockutil holds the small helpers package lock uses and a program around its locks (a
// view of the lock keys, a fault lab, locks of its own) shares rather than copies: the one
// context-aware sleep, the one way of naming a client's server, the one glob quoting of a key in
// a pattern, and the one rule telling a Redis failure that means "unavailable" from a reply to a
// wrong command. It imports nothing of the lock module, so package lock can use it.
package lockutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sleep waits for d or until ctx ends, whichever is first; it reports whether d elapsed (a d ≤ 0
// elapses at once while ctx is live).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Addr names the server a client talks to ("host:port"; "cluster host:port,..." for a cluster
// client), for messages and views.
func Addr(c redis.UniversalClient) string {
	if o, ok := c.(interface{ Options() *redis.Options }); ok {
		return o.Options().Addr
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return "cluster " + strings.Join(cc.Options().Addrs, ",")
	}
	return fmt.Sprintf("%v", c)
}

// GlobEscape quotes the characters a pattern (PSUBSCRIBE, SCAN MATCH) treats as glob syntax, so
// s matches only itself.
func GlobEscape(s string) string { return globSpecials.Replace(s) }

var globSpecials = strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `\`, `\\`)

// Unavailable reports whether err, from a Redis call, means the server is not there to serve:
// no answer, a broken connection, a context that ended before the answer, a closed client, or a
// reply saying the server will not serve anyone now (a wrong password, a dataset still loading, a
// replica without its master, a cluster that is down). A reply error to the command itself is
// not.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply) || errors.Is(err, redis.ErrClosed) || refusesService(err)
}

// RedisErr wraps err, from the Redis call op, as "lock: op: err", with unavailable (package
// lock's ErrUnavailable) wrapped too where Unavailable(err). Nil stays nil.
func RedisErr(op string, err, unavailable error) error {
	switch {
	case err == nil:
		return nil
	case Unavailable(err):
		return fmt.Errorf("lock: %s: %w: %w", op, unavailable, err)
	default:
		return fmt.Errorf("lock: %s: %w", op, err)
	}
}

// refusesService reports whether a reply error says the server will not serve anyone now, rather
// than that this command was wrong.
func refusesService(err error) bool {
	for _, p := range []string{"WRONGPASS", "NOAUTH", "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
