package lock

import (
	"context"
	_ "embed"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/rlock_line.lua
	rlockLineLua string
	//go:embed lua/rlock_release.lua
	rlockReleaseLua string
	//go:embed lua/rlock_enlist.lua
	rlockEnlistLua string
	//go:embed lua/rlock_pass.lua
	rlockPassLua string

	rlockReleaseSource = rlockLineLua + rlockReleaseLua
	rlockPassSource    = rlockLineLua + rlockPassLua

	rlockRelease = redis.NewScript(rlockReleaseSource)
	rlockEnlist  = redis.NewScript(rlockLineLua + rlockEnlistLua)
	rlockPass    = redis.NewScript(rlockPassSource)
)

// The nomination line of NewReentrant: across processes, a release sends one process's head to
// try, not every process's, while Redisson's wire stays as it is. The invariants, stated once:
//
//  1. Safety is not here. Who holds the lock is decided by Redisson's acquire script alone; a
//     nomination that is lost, late or wrong costs time, never exclusion. Nothing here writes the
//     lock hash, and every release still deletes it and publishes Redisson's unlock message, so a
//     Java Redisson client on the same lock sees exactly a Redisson peer: its waiters wake on every
//     release and race whoever tries.
//  2. The line. Beside Redisson's keys, in the lock's hash slot, a list of the processes
//     (Lockers) with a waiter for the lock, in the order they first failed to take it, and each
//     one's deadline (its last waiter's). A process is in it once: only its head tries
//     (handoff.go). A head that fails to take the lock queues its process (keeping its place); a
//     release by a process with more waiters keeps it in line for them, in the same script.
//  3. A release that deletes the lock first publishes a nomination on the lock's nomination
//     channel, the first process in line whose deadline has not passed ("" with nobody in line),
//     then the unlock message. A process hears both on one connection, in that order: on the
//     unlock message its head tries only if it was nominated or nobody was (a Redisson client's
//     release carries no nomination: then every head tries, as in Redisson).
//  4. A nominee that is gone holds the others up for at most its own wait, and 1 s: the
//     nomination carries that bound, and a head passed over looks again once it has run out
//     without a release in between. A nominee whose waiters have all left passes the nomination
//     on (the next in line, with a fresh unlock message) when it hears it, and so does a process
//     whose last waiter gives up.
type nominator struct {
	rdb  redis.UniversalClient
	sub  *subscriber
	line *handoff
	// id names this Locker in the line and in nominations.
	id string
}

// nominationChannel is the channel of lock name's nominations, in the lock's hash slot.
func nominationChannel(name string) string { return redissonPrefixed("seckill_rlock_next", name) }

// nominationKeys are the line scripts' keys (lua/rlock_line.lua).
func nominationKeys(name string) []string {
	return []string{name, unlockChannel(name), redissonPrefixed("seckill_rlock_line", name),
		redissonPrefixed("seckill_rlock_waiting", name), nominationChannel(name)}
}

// newNominator gives the reentrant Locker l a nomination line: its subscriber now also hears
// nominations, and its lines listen to both channels.
func newNominator(l *reentrantLocker) *nominator {
	n := &nominator{rdb: l.rdb, sub: l.sub, line: l.line, id: uuid.NewString()}
	l.sub.accept = func(payload string) bool { return payload == unlockMessage || strings.Contains(payload, "|") }
	l.line.listen = n.listen
	return n
}

// heard is what a process has heard on one lock's channels.
type heard struct {
	mu sync.Mutex
	// nominated: a nomination came whose unlock message has not yet; nominee and within are its.
	nominated bool
	nominee   string
	within    time.Duration
	// later rings the line when a nominee elsewhere has had its time (rule 4).
	later *time.Timer
}

// listen subscribes the line of key to its unlock channel, then to its nomination channel, on
// the subscriber's connection: a nomination heard is always followed by its unlock message (rule
// 3). The nomination channel's confirmation, which comes after the other's, is the ready one.
func (n *nominator) listen(key string, ring func()) (<-chan struct{}, func()) {
	st := &heard{}
	ctx := context.Background()
	unlock := n.sub.listen(ctx, unlockChannel(key), false, func(_, payload string) { n.onUnlock(key, st, payload, ring) })
	next := n.sub.listen(ctx, nominationChannel(key), false, func(_, payload string) { st.onNomination(payload) })
	return next.ready, func() {
		n.sub.leave(next)
		n.sub.leave(unlock)
		st.mu.Lock()
		if st.later != nil {
			st.later.Stop()
		}
		st.mu.Unlock()
	}
}

// onNomination records a nomination ("<id>|<ms>"); "" is a resubscription, after which no
// earlier nomination is waiting for its unlock message.
func (st *heard) onNomination(payload string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	id, ms, ok := strings.Cut(payload, "|")
	within, err := strconv.Atoi(ms)
	st.nominated = ok && err == nil
	st.nominee, st.within = id, time.Duration(within)*time.Millisecond
}

// onUnlock handles the unlock message (or "", a resubscription: releases may have gone unheard):
// ring the line when this process was nominated, nobody was, or nothing is known; otherwise ring
// it once the nominee has had its time, unless another release comes first.
func (n *nominator) onUnlock(key string, st *heard, payload string, ring func()) {
	if payload != unlockMessage && payload != "" {
		return
	}
	st.mu.Lock()
	nominated, nominee, within := st.nominated, st.nominee, st.within
	st.nominated = false
	if st.later != nil {
		st.later.Stop()
	}
	passedOver := payload != "" && nominated && nominee != "" && nominee != n.id
	if passedOver {
		if st.later == nil {
			st.later = time.AfterFunc(within, ring)
		} else {
			st.later.Reset(within)
		}
	}
	st.mu.Unlock()
	if passedOver {
		return
	}
	ring()
	if nominated && nominee == n.id && n.line.lastDeadline(key).IsZero() {
		go n.pass(key) // nobody here to take it up
	}
}

// enlist queues this process in key's line until deadline, after a failed attempt: it reports
// free when the lock was released meanwhile (try again now).
func (n *nominator) enlist(ctx context.Context, key string, deadline time.Time) (free bool, err error) {
	r, err := rlockEnlist.Run(ctx, n.rdb, nominationKeys(key), time.Now().UnixMilli(), n.id, deadline.UnixMilli()).Int()
	if err != nil {
		return false, redisErr("queue for "+key, err)
	}
	return r == 0, nil
}

// pass takes this process out of key's line and, when the lock is free, nominates the next
// process (rule 4): none of its waiters is left to take the lock up.
func (n *nominator) pass(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := n.sub.mode.script(ctx, rlockPass).Run(ctx, n.rdb, nominationKeys(key),
		time.Now().UnixMilli(), n.id, 0, unlockMessage).Err()
	if err != nil {
		n.sub.log.Debug("pass the nomination on", "key", key, "err", err)
	}
}

// releaseArgs are the release script's arguments (lua/rlock_release.lua) for field's release of
// key: this process stays in line when it has waiters left (stays).
func (n *nominator) releaseArgs(key, field string, leaseMs int64) (args []any, stays bool) {
	stay := int64(0)
	if last := n.line.lastDeadline(key); !last.IsZero() {
		stay = last.UnixMilli()
	}
	return []any{time.Now().UnixMilli(), n.id, stay, unlockMessage, leaseMs, field}, stay > 0
}

// released follows a release by this process that did not keep it in line (no waiter here):
// a waiter that comes after it must not sleep on the hint its holder left (handoff.go rule 6),
// waiting for a nomination this process is not in line for, so the line is rung here.
func (n *nominator) released(key string, stays bool) {
	if !stays {
		n.line.ring(key)
	}
}
