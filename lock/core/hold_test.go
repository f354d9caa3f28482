package core

import (
	"errors"
	"testing"
	"time"
)

// Each Hold reads its acquire's replies as its script answers them, whether the integers come as
// go-redis's int64 or the in-process Redis's int; anything else is Odd.
func TestHoldTried(t *testing.T) {
	now := time.UnixMilli(1_000)
	cases := []struct {
		name  string
		h     Hold
		reply any
		want  Try
	}{
		{"rlock held", RLock, nil, Try{Held: true}},
		{"rlock pttl int64", RLock, int64(1500), Try{Wait: 1500 * time.Millisecond}},
		{"rlock pttl int", RLock, 40, Try{Wait: 40 * time.Millisecond}},
		{"rlock gone since", RLock, int64(-2), Try{}},
		{"rlock no ttl", RLock, int64(-1), Try{Wait: -time.Millisecond}},
		{"rlock odd", RLock, "OK", Try{Odd: true}},
		{"rlock error", RLock, errors.New("ERR"), Try{Odd: true}},
		{"write upgrade", WriteSide, int64(-3), Try{Refused: true}},
		{"read -3 is a ttl reading", ReadSide, int64(-3), Try{Wait: -time.Millisecond}},
		{"read held", ReadSide, nil, Try{Held: true}},
		{"sem taken", Semaphore{N: 2}, int64(1), Try{Held: true}},
		{"sem none", Semaphore{N: 2}, 0, Try{Wait: -1}},
		{"sem nil", Semaphore{N: 2}, nil, Try{Odd: true}},
		{"permit taken", Permits, []any{int64(1), int64(0)}, Try{Held: true}},
		{"permit expires", Permits, []any{0, 1_250}, Try{Wait: 250 * time.Millisecond}},
		{"permit none held", Permits, []any{int64(0), int64(-1)}, Try{Wait: -1}},
		{"permit odd", Permits, []any{"x"}, Try{Odd: true}},
	}
	for _, c := range cases {
		if got := c.h.Tried(c.reply, now); got != c.want {
			t.Errorf("%s: Tried(%v) = %+v, want %+v", c.name, c.reply, got, c.want)
		}
	}
}

// Each Hold builds its scripts from one Ask: RLock queues its process in the line only with a
// Line, the write side uses the owner's write field, and a release tells what it gave back.
func TestHoldCalls(t *testing.T) {
	a := Ask{Key: "k", Field: "id:o", Lease: 30 * time.Second, Now: time.UnixMilli(5)}
	if c := RLock.Acquire(a); c.Script != "ReentrantAcquire" {
		t.Errorf("RLock without a line: %s", c.Script)
	}
	lined := a
	lined.Line, lined.Until = "n1", time.UnixMilli(900)
	if c := RLock.Acquire(lined); c.Script != "RLockAcquire" || c.Args[2] != int64(5) || c.Args[4] != int64(900) {
		t.Errorf("RLock in line: %s %v", c.Script, c.Args)
	}
	lined.Until = time.Time{}
	if c := RLock.Release(lined); c.Script != "RLockRelease" || c.Args[2] != int64(0) {
		t.Errorf("RLock release out of line: %s %v (want stay 0)", c.Script, c.Args)
	}
	if c := WriteSide.Renew(a); c.Script != "ReentrantRenew" || c.Args[1] != "id:o:write" {
		t.Errorf("write renewal: %s %v", c.Script, c.Args)
	}
	if c := Permits.Acquire(a); c.Args[2] != int64(30_005) {
		t.Errorf("permit expiry: %v, want now + lease", c.Args)
	}
	if !RLock.Released(int64(0)) || RLock.Released(nil) || Permits.Released(int64(0)) || !Permits.Released(1) {
		t.Error("Released misreads a release's reply")
	}
	if !ReadSide.Rings("1") || !WriteSide.Rings("0") || RLock.Rings("1") || !Semaphore.Rings(Semaphore{}, "3") {
		t.Error("Rings misreads a release's message")
	}
	if WriteSide.Field(a) != "id:o:write" || ReadSide.Field(a) != "id:o" || RLock.Field(a) != "id:o" {
		t.Error("Field names the wrong hash field")
	}
	if !ReadSide.Shares() || WriteSide.Shares() || RLock.Shares() || !Permits.Shares() {
		t.Error("Shares misdescribes who may hold at once")
	}
	if Renewed(int64(0)) || !Renewed(1) || Renewed(nil) {
		t.Error("Renewed misreads a renewal's reply")
	}
}
