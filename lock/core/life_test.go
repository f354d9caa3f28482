package core

import (
	"errors"
	"testing"
	"time"
)

// t0 is the fake clock's start: the core reads no clock, so every test gives it the time.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

const lease = 3 * time.Second

// watched is a lease of 3 s renewed by a watchdog, taken by a command sent at t0.
func watched(t *testing.T) (*Life, Ready) {
	t.Helper()
	return NewLife(at(5), SafeEnd(t0, lease), lease, lease, true)
}

func TestLifeRenewsEveryThirdOfTheLease(t *testing.T) {
	l, r := watched(t)
	if r.Renew || r.Lost || !r.Wake.Equal(at(1005)) {
		t.Fatalf("at the start: %+v, want a wake at the first renewal (1005ms)", r)
	}
	if r := l.Tick(at(1005)); !r.Renew || !r.Wake.Equal(l.Until()) {
		t.Fatalf("at the first renewal: %+v, want Renew and a wake at the end", r)
	}
	// A second tick while the renewal is in flight sends nothing more.
	if r := l.Tick(at(1500)); r.Renew {
		t.Fatal("a renewal was asked for while one is in flight")
	}
	r = l.Renewed(at(1010), SafeEnd(at(1005), lease))
	if r.Renew || !r.Wake.Equal(at(2010)) || !l.Until().Equal(SafeEnd(at(1005), lease)) {
		t.Fatalf("after the renewal: %+v, until %v", r, l.Until())
	}
	if l.Renewals() != 1 {
		t.Fatalf("%d renewals counted, want 1", l.Renewals())
	}
}

// A renewal that never answers cannot hold the loss back: the end is the core's own deadline.
func TestLifeLostAtItsEndWhateverIsInFlight(t *testing.T) {
	l, _ := watched(t)
	l.Tick(at(1005)) // the renewal goes out and never comes back
	end := SafeEnd(t0, lease)
	if r := l.Tick(end.Add(-time.Millisecond)); r.Lost {
		t.Fatal("lost before its end")
	}
	r := l.Tick(end)
	if !r.Lost || !errors.Is(r.Why, ErrRanOut) {
		t.Fatalf("at its end: %+v, want Lost with ErrRanOut", r)
	}
	// The renewal that lands afterwards does not bring it back.
	if r := l.Renewed(end.Add(time.Second), SafeEnd(at(1005), lease)); r.Lost || r.Renew || !l.Over() {
		t.Fatalf("a late answer: %+v, over %v", r, l.Over())
	}
	if end.Sub(t0) != lease-Margin(lease) || Margin(lease) != 32*time.Millisecond {
		t.Fatalf("the end is %s after the send, want the lease less 1%% and 2 ms", end.Sub(t0))
	}
}

func TestLifeRetriesAFailedRenewalWhileTheLeaseLasts(t *testing.T) {
	l, _ := watched(t)
	l.Tick(at(1005))
	r := l.Failed(at(1100))
	if r.Renew || !r.Wake.Equal(at(1150)) {
		t.Fatalf("after a failure: %+v, want a retry after 50 ms (lease/30, at most 50 ms)", r)
	}
	if r := l.Tick(at(1150)); !r.Renew {
		t.Fatalf("the retry: %+v, want Renew", r)
	}
	if r := l.Refused(errors.New("someone else's")); !r.Lost {
		t.Fatal("a refused renewal did not lose the lease")
	}
}

func TestLifeEndedIsNotLost(t *testing.T) {
	l, _ := watched(t)
	l.End()
	if r := l.Tick(at(1005)); r.Renew || r.Lost || !r.Wake.IsZero() {
		t.Fatalf("after End: %+v, want nothing", r)
	}
	if r := l.Check(at(10_000)); r.Lost {
		t.Fatal("a lease given back was lost at its end")
	}
}

// A lock handed over short lives its TTL until the first renewal pushes it out to the lease, a
// third of the way into the TTL.
func TestLifeHandedOverShort(t *testing.T) {
	const ttl = 300 * time.Millisecond
	l, r := NewLife(at(10), SafeEnd(t0, ttl), ttl, lease, true)
	if !r.Wake.Equal(at(110)) {
		t.Fatalf("first wake %v, want a third of the TTL in (110ms)", r.Wake.Sub(t0))
	}
	if r := l.Tick(at(110)); !r.Renew {
		t.Fatal("no push a third of the way into a short TTL")
	}
	l.Renewed(at(120), SafeEnd(at(110), lease))
	if !l.Until().Equal(SafeEnd(at(110), lease)) {
		t.Fatalf("after the push the lease ends %v after t0", l.Until().Sub(t0))
	}
}

// Without a watchdog nothing is sent: the lease ends at its end unless refreshed.
func TestLifeUnwatched(t *testing.T) {
	l, r := NewLife(at(5), SafeEnd(t0, lease), lease, lease, false)
	if r.Renew || !r.Wake.Equal(SafeEnd(t0, lease)) {
		t.Fatalf("at the start: %+v", r)
	}
	l.Refreshed(at(2000), SafeEnd(at(2000), lease))
	if r := l.Check(SafeEnd(t0, lease)); r.Lost {
		t.Fatal("lost at the old end after a Refresh")
	}
	if r := l.Check(SafeEnd(at(2000), lease)); !r.Lost {
		t.Fatal("not lost at the refreshed end")
	}
}

// A lock handed over short (300 ms of a 3 s lease) is pushed out to its lease a third of the way
// into what it has, watched or not; unwatched, once.
func TestLifePushesAShortLockOnce(t *testing.T) {
	short := 300 * time.Millisecond
	for _, watch := range []bool{false, true} {
		l, r := NewLife(at(0), SafeEnd(t0, short), short, lease, watch)
		if r.Renew || !r.Wake.Equal(at(100)) {
			t.Fatalf("watch %v: at the start %+v, want a wake at a third of 300ms", watch, r)
		}
		if r := l.Tick(at(100)); !r.Renew {
			t.Fatalf("watch %v: no push at a third of the short TTL", watch)
		}
		r = l.Renewed(at(104), SafeEnd(at(100), lease))
		if r.Lost || !l.Until().Equal(SafeEnd(at(100), lease)) {
			t.Fatalf("watch %v: after the push %+v, until %v", watch, r, l.Until())
		}
		if !watch && (!r.Wake.Equal(l.Until()) || l.Renewals() != 0) {
			t.Fatalf("unwatched: after the push %+v (%d renewals), want only the end", r, l.Renewals())
		}
		if watch && (!r.Wake.Equal(at(1104)) || l.Renewals() != 1) {
			t.Fatalf("watched: after the push %+v (%d renewals), want the next round at 1104ms", r, l.Renewals())
		}
	}
	// With its whole lease and no watchdog, nothing is ever sent.
	l, r := NewLife(at(0), SafeEnd(t0, lease), lease, lease, false)
	if r.Renew || !r.Wake.Equal(l.Until()) {
		t.Fatalf("a whole unwatched lease: %+v, want only its end", r)
	}
}

func TestStaleWhenLessThanAThirdIsLeft(t *testing.T) {
	end := SafeEnd(t0, lease)
	if Stale(at(0), end, lease) || Stale(end.Add(-lease/3), end, lease) {
		t.Fatal("a lock with a third or more left is stale")
	}
	if !Stale(end.Add(-lease/3+time.Millisecond), end, lease) || !Stale(end.Add(time.Second), end, lease) {
		t.Fatal("a lock with less than a third left is not stale")
	}
}
