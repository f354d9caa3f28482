package core

import "time"

// PermitSaid reads the answer of an expirable semaphore's acquire (script/lua/permit_acquire.lua),
// as lock/permit.go and `seckill simulate` both do: {1, _} a permit taken (held); {0, at} none free,
// and the earliest permit held expires at at (unix ms; < 0: none will), so the waiter may sleep
// until then (retry; < 0: until a release rings). ok is false for an answer of another shape.
func PermitSaid(r []int64, now time.Time) (held bool, retry time.Duration, ok bool) {
	switch {
	case len(r) != 2:
		return false, 0, false
	case r[0] == 1:
		return true, 0, true
	case r[1] < 0:
		return false, -1, true
	}
	return false, max(time.UnixMilli(r[1]).Sub(now), 0), true
}
