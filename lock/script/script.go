// Package script owns the Lua sources of the lock library's scripts: the one place their texts
// come from. Package lock runs them; a simulator or a test can read exactly what the library
// sends to Redis. Each exported string is a script as sent; Sources lists them by name.
//
// # One file per script, read on its own
//
// Each script is one file under lua/, named after it (LineAcquire is lua/line_acquire.lua). Its
// header comment lists every KEYS[i] and ARGV[i] with a name and a meaning, and its first lines
// bind them to locals of those names (local lock_key = KEYS[1]); below, the script uses only
// the names. The order of the arguments is the wire protocol (the Go callers pass them
// positionally, and Redisson reads the same keys), so a name never changes a position.
//
// # The include step
//
// Lua that several scripts share lives in include files under lua/ too, each starting with
// a header that says what it is for and two lines a reader (and this package's tests) can check:
//
//	--! requires line_key, waiters_key, now   the named locals an includer must bind first
//	--! defines first_live, token, queue      every top-level local the include defines
//
// A script (or an include) takes one in with a line
//
//	--! include line.lua
//
// placed after its argument bindings. When the package initialises, each such line is followed,
// in place, by the included file's text, resolved the same way; a file already included in the
// same script is not included again, so an include may itself include what it uses (line.lua
// includes queue_once.lua and drop_dead.lua). Nothing else joins texts: every name a file uses
// is defined in it, in a file it includes, or is a name its header requires. The scripts as sent
// keep the include lines, so a reader of a script in Redis sees where each part came from.
//
// # Classic and sharded pub/sub
//
// A script that announces a release calls publish(channel, message), which it takes from
// publish.lua (PUBLISH). Its sharded build (the *Sharded strings, sent on a Redis 7 cluster with
// sharded pub/sub, see lock/interop.go) is the same file resolved with spublish.lua (SPUBLISH)
// in place of publish.lua: the two builds differ in that one function and nothing else.
package script

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed lua/*.lua
var files embed.FS

// includeLine starts a line that takes in another file.
const includeLine = "--! include "

// shardedSwap is the one difference between a script's classic and its sharded build.
var shardedSwap = map[string]string{"publish.lua": "spublish.lua"}

// build is file's text with its includes resolved; swap names a file to take in place of
// another (nil: none). A missing file or an include cycle panics: the texts are fixed at build
// time, and this package's tests load every script.
func build(file string, swap map[string]string) string {
	var b strings.Builder
	resolve(&b, file, swap, map[string]bool{}, nil)
	return b.String()
}

func resolve(b *strings.Builder, file string, swap map[string]string, done map[string]bool, path []string) {
	for _, p := range path {
		if p == file {
			panic(fmt.Sprintf("script: include cycle %s -> %s", strings.Join(path, " -> "), file))
		}
	}
	src, err := files.ReadFile("lua/" + file)
	if err != nil {
		panic(fmt.Sprintf("script: %v", err))
	}
	done[file] = true
	for _, line := range strings.SplitAfter(string(src), "\n") {
		b.WriteString(line)
		name, ok := strings.CutPrefix(strings.TrimSpace(line), includeLine)
		if !ok {
			continue
		}
		if s, ok := swap[name]; ok {
			name = s
		}
		if !done[name] {
			resolve(b, name, swap, done, append(path, file))
		}
	}
}

// The scripts as sent, by the lock that runs them.
var (
	// LineAcquire and LineRelease: the waiter line of NewLua and NewFenced (lock/line.go).
	LineAcquire = build("line_acquire.lua", nil)
	LineRelease = build("line_release.lua", nil)
	// FencedRenew pushes a string lock's expiry out while it holds a value (NewLua, NewFenced).
	FencedRenew = build("fenced_renew.lua", nil)

	// ReentrantAcquire, ReentrantRenew, ReentrantRelease: NewReentrant in Redisson's RLock layout.
	ReentrantAcquire = build("reentrant_acquire.lua", nil)
	ReentrantRenew   = build("reentrant_renew.lua", nil)
	ReentrantRelease = build("reentrant_release.lua", nil)
	// RLockAcquire, RLockRelease, RLockPass: NewReentrant's waiters in the line (lock/nomination.go).
	RLockAcquire = build("rlock_acquire.lua", nil)
	RLockRelease = build("rlock_release.lua", nil)
	RLockPass    = build("rlock_pass.lua", nil)

	// FairAcquire, FairBeat, FairRelease, FairCancel: NewFair (Redisson's RFairLock).
	FairAcquire = build("fair_acquire.lua", nil)
	FairBeat    = build("fair_beat.lua", nil)
	FairRelease = build("fair_release.lua", nil)
	FairCancel  = build("fair_cancel.lua", nil)

	// RFencedAcquire: NewFenced with WithRFencedLockLayout.
	RFencedAcquire = build("rfenced_acquire.lua", nil)
	// RedlockTokenRead and RedlockTokenRaise: NewRedlock with WithFencingTokens.
	RedlockTokenRead  = build("redlock_token_read.lua", nil)
	RedlockTokenRaise = build("redlock_token_raise.lua", nil)

	// ReadLockAcquire, ReadLockRelease, ReadLockRenew, WriteLockAcquire, WriteLockRelease:
	// NewReadWrite in Redisson's RReadWriteLock layout (its write side renews with ReentrantRenew).
	ReadLockAcquire  = build("read_lock_acquire.lua", nil)
	ReadLockRelease  = build("read_lock_release.lua", nil)
	ReadLockRenew    = build("read_lock_renew.lua", nil)
	WriteLockAcquire = build("write_lock_acquire.lua", nil)
	WriteLockRelease = build("write_lock_release.lua", nil)
	// SemSet, SemAcquire, SemRelease: NewSemaphore (Redisson's RSemaphore); SemSet is also
	// NewExpirableSemaphore's TrySetPermits.
	SemSet     = build("sem_set.lua", nil)
	SemAcquire = build("sem_acquire.lua", nil)
	SemRelease = build("sem_release.lua", nil)
	// PermitAcquire, PermitRenew, PermitRelease, PermitAvailable: NewExpirableSemaphore
	// (Redisson's RPermitExpirableSemaphore).
	PermitAcquire   = build("permit_acquire.lua", nil)
	PermitRenew     = build("permit_renew.lua", nil)
	PermitRelease   = build("permit_release.lua", nil)
	PermitAvailable = build("permit_available.lua", nil)
)

// The sharded builds of the scripts that announce a release (publish.lua swapped for
// spublish.lua), which package lock sends instead of the classic ones when its pub/sub is
// sharded.
var (
	ReentrantReleaseSharded = build("reentrant_release.lua", shardedSwap)
	RLockReleaseSharded     = build("rlock_release.lua", shardedSwap)
	RLockPassSharded        = build("rlock_pass.lua", shardedSwap)
	FairReleaseSharded      = build("fair_release.lua", shardedSwap)
	FairBeatSharded         = build("fair_beat.lua", shardedSwap)
	FairCancelSharded       = build("fair_cancel.lua", shardedSwap)
	ReadLockReleaseSharded  = build("read_lock_release.lua", shardedSwap)
	WriteLockReleaseSharded = build("write_lock_release.lua", shardedSwap)
	SemSetSharded           = build("sem_set.lua", shardedSwap)
	SemReleaseSharded       = build("sem_release.lua", shardedSwap)
	PermitAcquireSharded    = build("permit_acquire.lua", shardedSwap)
	PermitRenewSharded      = build("permit_renew.lua", shardedSwap)
	PermitReleaseSharded    = build("permit_release.lua", shardedSwap)
	PermitAvailableSharded  = build("permit_available.lua", shardedSwap)
)

// Sources is every script as sent (the classic build), by its exported name.
func Sources() map[string]string {
	return map[string]string{
		"LineAcquire": LineAcquire, "LineRelease": LineRelease, "FencedRenew": FencedRenew,
		"ReentrantAcquire": ReentrantAcquire, "ReentrantRenew": ReentrantRenew, "ReentrantRelease": ReentrantRelease,
		"RLockAcquire": RLockAcquire, "RLockRelease": RLockRelease, "RLockPass": RLockPass,
		"FairAcquire": FairAcquire, "FairBeat": FairBeat, "FairRelease": FairRelease, "FairCancel": FairCancel,
		"RFencedAcquire": RFencedAcquire, "RedlockTokenRead": RedlockTokenRead, "RedlockTokenRaise": RedlockTokenRaise,
		"ReadLockAcquire": ReadLockAcquire, "ReadLockRelease": ReadLockRelease, "ReadLockRenew": ReadLockRenew,
		"WriteLockAcquire": WriteLockAcquire, "WriteLockRelease": WriteLockRelease,
		"SemSet": SemSet, "SemAcquire": SemAcquire, "SemRelease": SemRelease,
		"PermitAcquire": PermitAcquire, "PermitRenew": PermitRenew, "PermitRelease": PermitRelease,
		"PermitAvailable": PermitAvailable,
	}
}

// ShardedSources is every sharded build, by the exported name of its classic build.
func ShardedSources() map[string]string {
	return map[string]string{
		"ReentrantRelease": ReentrantReleaseSharded, "RLockRelease": RLockReleaseSharded, "RLockPass": RLockPassSharded,
		"FairRelease": FairReleaseSharded, "FairCancel": FairCancelSharded, "FairBeat": FairBeatSharded,
		"ReadLockRelease": ReadLockReleaseSharded, "WriteLockRelease": WriteLockReleaseSharded,
		"SemSet": SemSetSharded, "SemRelease": SemReleaseSharded,
		"PermitAcquire": PermitAcquireSharded, "PermitRenew": PermitRenewSharded,
		"PermitRelease": PermitReleaseSharded, "PermitAvailable": PermitAvailableSharded,
	}
}

// Names lists the scripts' names, sorted.
func Names() []string {
	var n []string
	for k := range Sources() {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
