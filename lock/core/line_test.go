package core

import (
	"testing"
	"time"
)

// A lock handed to a waiter is taken without a word to Redis; a grant for nobody here is passed
// on; a waiter that leaves passes on a lock handed to it, or leaves the Redis line.
func TestLineGrants(t *testing.T) {
	l := NewLine(Cohort)
	l.Enter(at(0), "k", "p:a", lease, GrantTTL(lease, time.Second, MaxGrantTTL), at(1000))
	if look := l.Look(at(1), "p:a", true); look.Won || !look.QueueUntil.Equal(at(1000)) {
		t.Fatalf("first look: %+v, want a try queueing until the deadline", look)
	}
	if d := l.Tried(at(2), "p:a", 10*time.Second, LostGrantBound, true); d != LostGrantBound {
		t.Fatalf("queued: sleeps %v, want LostGrantBound", d)
	}
	if look := l.Look(at(100), "p:a", true); look.Wait != 152*time.Millisecond {
		t.Fatalf("a look before its bound: %+v, want a wait to 252ms", look)
	}
	if ring, passOn := l.Granted("k", "p:a", 7, true, time.Time{}); !ring || passOn {
		t.Fatalf("a grant for a waiter here: ring %v passOn %v", ring, passOn)
	}
	look := l.Look(at(101), "p:a", true)
	if !look.Won || look.Win.Token != 7 || !look.Win.Short || !look.Win.Since.Equal(at(1)) {
		t.Fatalf("the granted waiter's look: %+v, want the lock, token 7, counted from its last attempt", look)
	}
	if _, passOn := l.Granted("k", "p:gone", 8, true, time.Time{}); !passOn {
		t.Fatal("a grant for nobody here is not passed on")
	}
	l.Enter(at(0), "k", "p:b", lease, time.Second, at(1000))
	l.Granted("k", "p:b", 9, true, time.Time{})
	if passOn, leave := l.Exit(at(200), "k", "p:b", false); !passOn || leave {
		t.Fatalf("a waiter leaving with a lock handed to it: passOn %v leave %v", passOn, leave)
	}
	// Without the lock, a waiter leaves the Redis line when an attempt of it queued there, or may
	// have (no answer came); not when none reached Redis.
	for _, tc := range []struct {
		name  string
		steps func(v string)
		leave bool
	}{
		{"queued", func(v string) { l.Look(at(1), v, true); l.Tried(at(2), v, time.Second, LostGrantBound, true) }, true},
		{"no answer", func(v string) { l.Look(at(1), v, true) }, true},
		{"refused", func(v string) { l.Look(at(1), v, true); l.Unsent(v) }, false},
		{"no answer, then refused", func(v string) { l.Look(at(1), v, true); l.Look(at(21), v, true); l.Unsent(v) }, true},
		{"never tried", func(string) {}, false},
		{"tried without queueing", func(v string) { l.Look(at(1), v, false); l.Tried(at(2), v, time.Second, LostGrantBound, false) }, false},
	} {
		v := "p:" + tc.name
		l.Enter(at(0), "k", v, lease, time.Second, at(1000))
		tc.steps(v)
		if passOn, leave := l.Exit(at(200), "k", v, false); passOn || leave != tc.leave {
			t.Errorf("a waiter leaving without the lock, %s: passOn %v leave %v, want leave %v", tc.name, passOn, leave, tc.leave)
		}
	}
}

// A holder here makes the head wait for its release; a release hands the lock to the next waiter
// here before the Redis line for at most a cohort of holders in a row.
func TestLineCohort(t *testing.T) {
	l := NewLine(2)
	l.Enter(at(0), "k", "p:a", lease, time.Second, at(5000))
	l.Exit(at(0), "k", "p:a", true)
	l.Enter(at(1), "k", "p:b", lease, time.Second, at(5000))
	if look := l.Look(at(1), "p:b", true); look.Wait != lease-time.Millisecond {
		t.Fatalf("a head behind a holder here: %+v, want a wait for its release", look)
	}
	next, ok := l.Next("k", "p:a", "p:b", true, true)
	if !ok || next.Value != "p:b" || !next.Before {
		t.Fatalf("the first release's next: %+v %v, want p:b before the line", next, ok)
	}
	l.Released(at(2), "k", "p:a", true, "p:b", "p:b")
	l.Granted("k", "p:b", 0, false, at(2))
	l.Exit(at(3), "k", "p:b", true)
	l.Enter(at(3), "k", "p:c", lease, time.Second, at(5000))
	if next, ok := l.Next("k", "p:b", "p:c", true, true); !ok || next.Before {
		t.Fatalf("the second release in a row: %+v %v, want p:c behind the Redis line (cohort 2)", next, ok)
	}
	if _, ok := l.Next("k", "p:b", "p:c", true, false); ok {
		t.Fatal("a next waiter passed on before the process hears grants")
	}
	// The release queued p:c behind in the Redis line: it waits for its grant.
	l.Released(at(4), "k", "p:b", false, "p:c", "q:other")
	if look := l.Look(at(5), "p:c", true); look.Wait <= 0 {
		t.Fatalf("a waiter the release queued behind: %+v, want a wait for its grant", look)
	}
}
