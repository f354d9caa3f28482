// Package naive is the lab's deliberately broken locks (steps 2 to 5 of docs/lab.md) as the
// commands each sends, one at a time, and what each reply means. The lab's modes (internal/modes)
// send them to Redis; `seckill simulate` sends them to its in-process Redis, one step each, so a
// fault or another client can come between any two. Neither says again what the other sends.
package naive

import (
	_ "embed"
	"strconv"
)

// A Step is one command, built from the lock's key, the holder's value and its lease (ms), and
// what its reply means: On reports whether the holder goes on (nil: it always does). A nil
// reply is Redis's nil.
type Step struct {
	Name string
	Args func(key, value string, leaseMs int64) []string
	On   func(reply any, value string) bool
}

// Lock is a broken lock. Acquire's first step is tried again until it goes on (a poll); the steps
// after it follow once each. A release step that does not go on ends the release: the lock was not
// the holder's (its key gone, reply nil; or another holder's, which the last step, the DEL, has
// deleted all the same).
type Lock struct {
	Acquire, Release []Step
}

// Locks are the broken locks by mode name; "none" takes no lock at all.
var Locks = map[string]Lock{
	"none":         {},
	"setnx":        {Acquire: []Step{setnx}, Release: []Step{del}},
	"setnx-expire": {Acquire: []Step{setnx, pexpire}, Release: []Step{del}},
	"setnx-ex":     {Acquire: []Step{setNXPX}, Release: []Step{del}},
	"uuid":         {Acquire: []Step{setNXPX}, Release: []Step{get, del}},
}

// DeleteObserved is the blind DEL: it deletes the key whoever holds it, and answers what it deleted
// (nil: nothing), only so that the lab can tell when the DEL removed another holder's lock.
//
//go:embed delete_observed.lua
var DeleteObserved string

var (
	// setnx is SETNX with no expiry: 1, taken.
	setnx = Step{Name: "SETNX",
		Args: func(k, v string, _ int64) []string { return []string{"SETNX", k, v} },
		On:   func(r any, _ string) bool { return isOne(r) }}
	// pexpire is the expiry sent apart, after the SETNX.
	pexpire = Step{Name: "PEXPIRE",
		Args: func(k, _ string, lease int64) []string { return []string{"PEXPIRE", k, ms(lease)} }}
	// setNXPX is the atomic SET NX PX: OK, taken.
	setNXPX = Step{Name: "SET NX PX",
		Args: func(k, v string, lease int64) []string { return []string{"SET", k, v, "NX", "PX", ms(lease)} },
		On:   func(r any, _ string) bool { return r == "OK" }}
	// get is the release's check, in the client: the key still holds the holder's value.
	get = Step{Name: "GET",
		Args: func(k, _ string, _ int64) []string { return []string{"GET", k} },
		On:   isValue}
	// del is the blind DEL (DeleteObserved): it deleted the holder's own lock.
	del = Step{Name: "DEL",
		Args: func(k, _ string, _ int64) []string { return []string{"EVAL", DeleteObserved, "1", k} },
		On:   isValue}
)

func ms(n int64) string { return strconv.FormatInt(max(n, 1), 10) }

func isValue(r any, v string) bool { return r == v }

// isOne: an integer reply of 1 (go-redis gives an int64, the in-process Redis an int).
func isOne(r any) bool { return r == int64(1) || r == 1 }
