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
