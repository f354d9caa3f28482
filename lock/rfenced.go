package lock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// NewFenced with WithRFencedLockLayout is Redisson's RFencedLock (RedissonFencedLock, a
// RedissonLock whose every acquisition also raises a token counter): the reentrant lock of
// reentrant.go, with its hash, owners, watchdog, release script and wake-up on Redisson's unlock
// channel, whose acquire script also draws the token (script/lua/rfenced_acquire.lua). A Java service
// calling getFencedLock(name) on the same Redis therefore excludes with this one both ways, each
// side's release wakes the other's waiters, and both draw their tokens from one counter, so the
// tokens of the holders, whichever side they are on, strictly increase in the order they held
// the lock.
//
// What it gives up against the default layout (line.go): a release there hands the lock to one
// waiter and draws its token in the same script, which needs the lock to be a string the line's
// scripts write; Redisson's hash and its waiters know nothing of that line. Here a release
// publishes one message and every process with a waiter for the lock sends its head to try
// again, as Redisson's waiters do; within a process the waiters still take turns (handoff.go).

// newRFenced builds NewFenced in RFencedLock's layout.
func newRFenced(d settings) *reentrantLocker {
	l := newReentrantOn("fenced", d.Data, d, newPubsubMode(d.Data, d.Subscription), false)
	l.fenced = true
	return l
}

// rfencedCall is the acquire script (script/lua/rfenced_acquire.lua), which keeps the default
// layout's counter (always in the lock's slot) in step with RFencedLock's.
func (l *reentrantLocker) rfencedCall(key, field string, leaseMs int64) script.Call {
	return script.RFencedAcquireCall(key, field, leaseMs, fencedTokenKey(l.rdb, key))
}

// tryFenced runs the acquire script once: held with its token, or the holder's remaining PTTL.
func (l *reentrantLocker) tryFenced(ctx context.Context, ask core.Ask) (bool, time.Duration, int64, error) {
	r, err := run(ctx, l.rdb, l.rfencedCall(ask.Key, ask.Field, max(ask.Lease.Milliseconds(), 1))).Int64Slice()
	if err != nil {
		return false, 0, 0, redisErr("fenced acquire "+ask.Key, err)
	}
	if len(r) != 2 {
		return false, 0, 0, fmt.Errorf("lock: fenced acquire %s: unexpected reply %v", ask.Key, r)
	}
	if r[1] > 0 {
		return true, 0, r[1], nil
	}
	return false, core.HolderTTL(r[0]), 0, nil
}

// hashTag is the part of key that Redis Cluster hashes when it has one: what lies between the
// first "{" and the next "}", when that is not empty.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return ""
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return ""
	}
	return key[open+1 : open+1+end]
}
