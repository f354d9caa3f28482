package lock

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// settings are what a Locker is built from: its clients and the constructor's Options applied
// over the defaults.
type settings struct {
	// Data is the one Redis of the single-server locks.
	Data redis.UniversalClient
	// Masters are the independent masters of the multilock and Redlock.
	Masters []redis.UniversalClient
	// InstanceID identifies this process, like the UUID of a Redisson client.
	InstanceID string
	// Lease is the default lease: the watchdog timeout.
	Lease time.Duration
	// WaitReplicas, when above 0, makes the reentrant lock WAIT for that many replicas to
	// acknowledge each acquisition, within WaitReplicasTimeout (see reentrant_sync.go).
	WaitReplicas        int
	WaitReplicasTimeout time.Duration
	Logger              *slog.Logger
	// DriftFactor is Redlock's clock-drift allowance.
	DriftFactor float64
	// RetryMin..RetryMax is the random pause between attempts where no release will wake a
	// waiter (0: each lock's default; see WithRetryDelay).
	RetryMin, RetryMax time.Duration
	// Fencing makes Redlock draw a fencing token for every acquisition (WithFencingTokens).
	Fencing bool
	// Subscription chooses classic or sharded pub/sub for the reentrant and fair locks
	// (WithShardedPubSub; interop.go).
	Subscription subMode
	// ThreadWait is the fair lock's thread wait (WithThreadWait); 0: each acquisition's wait.
	ThreadWait time.Duration
	// RFencedLayout keeps NewFenced's lock in Redisson RFencedLock's layout
	// (WithRFencedLockLayout; rfenced.go).
	RFencedLayout bool
	// given names the options applied, in order, so a constructor can refuse one it ignores.
	given []string
}

// mark records that the option called name was given.
func (o *settings) mark(name string) { o.given = append(o.given, name) }

// kindSpec is what a constructor honours: the options that mean something to it (given the
// settings: NewFenced honours Redisson's options only in RFencedLock's layout) and whether
// Options.Owner does.
type kindSpec struct {
	name    string
	options func(d settings) []string
	owners  func(d settings) bool
	newMode func(settings) (locker, error)
}

// common are the options every constructor honours.
var common = []string{"WithLease", "WithLogger", "WithInstanceID"}

// clientAddr names the server a client talks to ("host:port"), for error messages.
func clientAddr(c redis.UniversalClient) string {
	if o, ok := c.(interface{ Options() *redis.Options }); ok {
		return o.Options().Addr
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return "cluster " + strings.Join(cc.Options().Addrs, ",")
	}
	return fmt.Sprintf("%v", c)
}

// globEscape quotes the glob characters of s for a pattern subscription.
func globEscape(s string) string { return globSpecials.Replace(s) }

var globSpecials = strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `\`, `\\`)
