// Package script owns the Lua sources of the lock library's scripts: the one place their texts
// come from. Package lock runs them; a simulator or a test can read exactly what the library
// sends to Redis. Each exported string is a script's full source as sent (the shared fragments
// concatenated in their order); Sources lists them by name.
package script

import (
	_ "embed"
	"sort"
)

// The fragments, one file each under lua/.
var (
	//go:embed lua/queue_once.lua
	queueOnce string
	//go:embed lua/line_prelude.lua
	linePrelude string
	//go:embed lua/line_acquire.lua
	lineAcquire string
	//go:embed lua/line_release.lua
	lineRelease string
	//go:embed lua/fair_lag.lua
	fairLag string
	//go:embed lua/fair_drop_dead.lua
	fairDropDead string
	//go:embed lua/fair_acquire.lua
	fairAcquire string
	//go:embed lua/fair_release.lua
	fairRelease string
	//go:embed lua/fair_cancel.lua
	fairCancel string
	//go:embed lua/fair_alive.lua
	fairAlive string
	//go:embed lua/fair_beat.lua
	fairBeat string
	//go:embed lua/fenced_renew.lua
	fencedRenew string
	//go:embed lua/redlock_token_read.lua
	redlockTokenRead string
	//go:embed lua/redlock_token_raise.lua
	redlockTokenRaise string
	//go:embed lua/reentrant_acquire.lua
	reentrantAcquire string
	//go:embed lua/reentrant_renew.lua
	reentrantRenew string
	//go:embed lua/release_hold.lua
	releaseHold string
	//go:embed lua/reentrant_release.lua
	reentrantRelease string
	//go:embed lua/rfenced_acquire.lua
	rfencedAcquire string
	//go:embed lua/rlock_line.lua
	rlockLine string
	//go:embed lua/rlock_release.lua
	rlockRelease string
	//go:embed lua/rlock_enlist.lua
	rlockEnlist string
	//go:embed lua/rlock_pass.lua
	rlockPass string
)

// The scripts as sent, by the lock that runs them.
var (
	// LineAcquire and LineRelease: the waiter line of NewLua and NewFenced (lock/line.go).
	LineAcquire = queueOnce + linePrelude + lineAcquire
	LineRelease = queueOnce + linePrelude + lineRelease
	// FencedRenew pushes a string lock's expiry out while it holds a value (NewLua, NewFenced).
	FencedRenew = fencedRenew

	// ReentrantAcquire, ReentrantRenew, ReentrantRelease: NewReentrant in Redisson's RLock layout.
	ReentrantAcquire = reentrantAcquire
	ReentrantRenew   = reentrantRenew
	ReentrantRelease = releaseHold + reentrantRelease
	// RLockRelease, RLockEnlist, RLockPass: NewReentrant's nomination line (lock/nomination.go).
	RLockRelease = releaseHold + queueOnce + rlockLine + rlockRelease
	RLockEnlist  = queueOnce + rlockLine + rlockEnlist
	RLockPass    = queueOnce + rlockLine + rlockPass

	// FairAcquire, FairBeat, FairRelease, FairCancel: NewFair (Redisson's RFairLock).
	FairAcquire = queueOnce + fairAlive + fairLag + fairDropDead + fairAcquire
	FairBeat    = fairAlive + fairLag + fairDropDead + fairBeat
	FairRelease = releaseHold + fairLag + fairDropDead + fairRelease
	FairCancel  = fairLag + fairCancel

	// RFencedAcquire: NewFenced with WithRFencedLockLayout.
	RFencedAcquire = rfencedAcquire
	// RedlockTokenRead and RedlockTokenRaise: NewRedlock with WithFencingTokens.
	RedlockTokenRead  = redlockTokenRead
	RedlockTokenRaise = redlockTokenRaise
)

// Sources is every script as sent, by its exported name.
func Sources() map[string]string {
	return map[string]string{
		"LineAcquire": LineAcquire, "LineRelease": LineRelease, "FencedRenew": FencedRenew,
		"ReentrantAcquire": ReentrantAcquire, "ReentrantRenew": ReentrantRenew, "ReentrantRelease": ReentrantRelease,
		"RLockRelease": RLockRelease, "RLockEnlist": RLockEnlist, "RLockPass": RLockPass,
		"FairAcquire": FairAcquire, "FairBeat": FairBeat, "FairRelease": FairRelease, "FairCancel": FairCancel,
		"RFencedAcquire": RFencedAcquire, "RedlockTokenRead": RedlockTokenRead, "RedlockTokenRaise": RedlockTokenRaise,
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
