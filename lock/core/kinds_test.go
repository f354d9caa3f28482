package core

import (
	"slices"
	"testing"
	"time"
)

// A heartbeat's reading: a holder of this process is rung (F7), a free lock rings its head or,
// with nobody queued, every waiter, and a lock about to expire brings the next beat forward.
func TestFairBeatSaid(t *testing.T) {
	cases := []struct {
		head, holder string
		pttl         int64
		ring         []string
		all          bool
		next         time.Duration
	}{
		{head: "p:b", holder: "p:a", pttl: 20_000, ring: []string{"p:a"}, next: AliveEvery},
		{head: "p:b", pttl: -2, ring: []string{"p:b"}, next: AliveEvery},
		{pttl: -2, all: true, next: AliveEvery},
		{head: "p:b", holder: "p:a", pttl: 40, ring: []string{"p:a"}, next: 42 * time.Millisecond},
		{head: "p:b", pttl: -1, next: AliveEvery},
	}
	for _, c := range cases {
		b := FairBeatSaid(c.head, c.pttl, c.holder)
		if !slices.Equal(b.Ring, c.ring) || b.All != c.all || b.Next != c.next {
			t.Errorf("FairBeatSaid(%q, %d, %q) = %+v, want ring %v all %v next %v", c.head, c.pttl, c.holder, b, c.ring, c.all, c.next)
		}
		if c.all && !b.Rings("anyone") || !c.all && b.Rings("p:z") {
			t.Errorf("%+v: Rings of a waiter it does not name is wrong", b)
		}
	}
	if FairNap(time.Millisecond, time.Second) != FairNapMin || FairNap(time.Hour, time.Second) != time.Second {
		t.Error("FairNap is not bounded by FairNapMin below and the thread wait above")
	}
}

// A Redlock waiter sleeps until a quorum could grant the lock: the quorum-th shortest PTTL.
func TestQuorumFree(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cases := []struct {
		ttls []time.Duration
		want time.Duration
	}{
		{[]time.Duration{ms(300), ms(100), ms(200)}, ms(200)},
		{[]time.Duration{-2, ms(100), ms(200)}, ms(100)},
		{[]time.Duration{-2, -2, ms(200)}, -1},
		{[]time.Duration{NoAnswer, ms(100), -1}, NoQuorumPoll},
		{[]time.Duration{NoAnswer, ms(100), ms(50)}, ms(100)},
	}
	for _, c := range cases {
		if got := QuorumFree(c.ttls, 2); got != c.want {
			t.Errorf("QuorumFree(%v, 2) = %v, want %v", c.ttls, got, c.want)
		}
	}
}

// A Redlock attempt's rounds: won and fenced, the token one past the largest counter read
// where the lock is still the attempt's; a round short of a quorum gives the lock back; a lost
// attempt sleeps on its own process's lease, or on the masters' PTTLs.
func TestRedlockRounds(t *testing.T) {
	r := NewRedlock(2, true)
	r.Set(true, 0)
	r.Answered([]int64{4, -1, 6})
	if r.Round != RedlockRaise || r.Token != 7 {
		t.Fatalf("after the read: %+v, want a raise to 7", r)
	}
	r.Answered([]int64{1, NoReply, 1})
	if r.Round != RedlockHeld || r.Token != 7 || !r.Over() {
		t.Fatalf("after the raise: %+v, want held with 7", r)
	}
	r = NewRedlock(2, true)
	r.Set(true, 0)
	r.Answered([]int64{3, NoReply, -1})
	if r.Round != RedlockUnfence {
		t.Fatalf("a read on one master of three: %+v, want the lock given back", r)
	}
	if r.GaveBack(); r.Round != RedlockSlept || r.Sleep != -1 {
		t.Fatalf("after the give-back: %+v, want a sleep of the poll delay", r)
	}
	r = NewRedlock(2, false)
	if r.Set(true, 0); r.Round != RedlockHeld {
		t.Fatalf("won, not fenced: %+v, want held", r)
	}
	r = NewRedlock(2, false)
	if r.Set(false, time.Second); r.Round != RedlockSlept || r.Sleep != time.Second {
		t.Fatalf("lost to a lease of this process: %+v, want a sleep of its second", r)
	}
	r = NewRedlock(2, false)
	if r.Set(false, 0); r.Round != RedlockPTTL {
		t.Fatalf("lost: %+v, want a PTTL round", r)
	}
	if r.PTTLs([]time.Duration{-2, 50 * time.Millisecond, time.Second}); r.Sleep != 50*time.Millisecond {
		t.Fatalf("after the PTTLs: %+v, want a sleep of 50ms", r)
	}
}

// An expirable semaphore's acquire: a permit taken, a sleep until the earliest permit held
// expires, a sleep until a release rings, or an answer of another shape.
func TestPermitSaid(t *testing.T) {
	now := time.UnixMilli(10_000)
	for _, c := range []struct {
		r        []int64
		held, ok bool
		retry    time.Duration
	}{
		{[]int64{1, 0}, true, true, 0},
		{[]int64{0, 10_250}, false, true, 250 * time.Millisecond},
		{[]int64{0, 9_000}, false, true, 0},
		{[]int64{0, -1}, false, true, -1},
		{[]int64{1}, false, false, 0},
	} {
		held, retry, ok := PermitSaid(c.r, now)
		if held != c.held || retry != c.retry || ok != c.ok {
			t.Errorf("PermitSaid(%v) = %v %v %v, want %v %v %v", c.r, held, retry, ok, c.held, c.retry, c.ok)
		}
	}
}
