package core

import (
	"slices"
	"testing"
	"time"
)

var listening = QueueConfig{Listens: true, Linger: time.Second, ConfirmWait: 250 * time.Millisecond}

// Waiters are served in arrival order, and only the head tries.
func TestQueueServesInArrivalOrder(t *testing.T) {
	q := ptr(NewQueue(QueueConfig{SureRing: true}))
	wait := at(10_000)
	if r := q.Enter(at(0), 1, wait); r.Try != 1 {
		t.Fatalf("the first waiter: %+v, want it to try", r)
	}
	for id := uint64(2); id <= 3; id++ {
		if r := q.Enter(at(1), id, wait); r.Try != 0 {
			t.Fatalf("waiter %d tries behind the head: %+v", id, r)
		}
	}
	// The head wins; the next sleeps on its hint (the release will ring) and tries when rung.
	r := q.Held(at(2), 1, at(1002))
	if r.Try != 0 || !r.Wake.Equal(at(1002)) {
		t.Fatalf("after the head won: %+v, want the next asleep until the hint (1002ms)", r)
	}
	if r := q.Ring(at(50)); r.Try != 2 {
		t.Fatalf("the release rang: %+v, want waiter 2 to try", r)
	}
	if h, _ := q.Head(); h != 2 {
		t.Fatalf("head %d, want 2", h)
	}
	// Waiter 2 gives up its place; 3 is next and, with no hint, tries at once.
	if r := q.Leave(at(60), 2); r.Try != 3 {
		t.Fatalf("the head left: %+v, want waiter 3 to try", r)
	}
}

// No ring is lost: one heard while the attempt was in flight makes the head look again at once;
// one older than the attempt does not wake it.
func TestQueueCountsRings(t *testing.T) {
	q := ptr(NewQueue(QueueConfig{SureRing: true}))
	q.Ring(at(0)) // before anyone waits
	if r := q.Enter(at(1), 1, at(10_000)); r.Try != 1 {
		t.Fatalf("enter: %+v", r)
	}
	r := q.Failed(at(2), 1, 300*time.Millisecond)
	if r.Try != 0 || !r.Wake.Equal(at(302)) {
		t.Fatalf("a ring older than the attempt woke the head, or its sleep is not the TTL read: %+v", r)
	}
	if r := q.Tick(at(302)); r.Try != 1 {
		t.Fatalf("the TTL read ran out: %+v, want a look", r)
	}
	q.Ring(at(303)) // while the attempt is in flight
	if r := q.Failed(at(304), 1, time.Second); r.Try != 1 {
		t.Fatalf("a ring during the attempt was lost: %+v", r)
	}
}

// After its first failed attempt the head subscribes, and looks again once Redis confirms, or
// when the confirmation is slow.
func TestQueueLooksAfterSubscribing(t *testing.T) {
	q := ptr(NewQueue(listening))
	q.Enter(at(0), 1, at(10_000))
	r := q.Failed(at(1), 1, time.Second)
	if !r.Subscribe || r.Try != 0 || !r.Wake.Equal(at(251)) {
		t.Fatalf("first failure: %+v, want Subscribe and a wait for the confirmation", r)
	}
	if r := q.Confirmed(at(5)); r.Try != 1 {
		t.Fatalf("confirmed: %+v, want one more look", r)
	}
	if r := q.Failed(at(6), 1, time.Second); r.Subscribe || !r.Wake.Equal(at(1006)) {
		t.Fatalf("a second failure: %+v, want a sleep on the TTL and no second subscription", r)
	}
	// Unconfirmed subscription: the head looks when the confirmation wait runs out.
	q = ptr(NewQueue(listening))
	q.Enter(at(0), 1, at(10_000))
	q.Failed(at(1), 1, time.Second)
	if r := q.Tick(at(251)); r.Try != 1 {
		t.Fatalf("the confirmation is slow: %+v, want a look at 251ms", r)
	}
	// Without a confirmed subscription, a winner's hint is not used: the release may not ring.
	q.Enter(at(252), 2, at(10_000))
	if r := q.Held(at(253), 1, at(1253)); r.Try != 2 {
		t.Fatalf("a hint used before the subscription is confirmed: %+v", r)
	}
}

// A look that began before the confirmation does not count: the head looks once more after it,
// whether it was asleep or trying when the confirmation came.
func TestQueueLooksOnceConfirmed(t *testing.T) {
	q := ptr(NewQueue(listening))
	q.Enter(at(0), 1, at(10_000))
	q.Failed(at(1), 1, time.Second)
	q.Tick(at(251)) // the confirmation is slow: it looks anyway
	if r := q.Failed(at(252), 1, time.Second); r.Try != 0 || !r.Wake.Equal(at(1252)) {
		t.Fatalf("unconfirmed, failed again: %+v, want a sleep on the TTL", r)
	}
	if r := q.Confirmed(at(300)); r.Try != 1 {
		t.Fatalf("confirmed while asleep: %+v, want a look", r)
	}
	if r := q.Failed(at(301), 1, time.Second); r.Try != 0 || !r.Wake.Equal(at(1301)) {
		t.Fatalf("a look after the confirmation failed: %+v, want a sleep, not another look", r)
	}
	// Confirmed while its attempt is in flight: that attempt may have run before Redis listened.
	q = ptr(NewQueue(listening))
	q.Enter(at(0), 1, at(10_000))
	q.Failed(at(1), 1, time.Second)
	q.Tick(at(251))
	q.Confirmed(at(260))
	if r := q.Failed(at(270), 1, time.Second); r.Try != 1 {
		t.Fatalf("the attempt in flight at the confirmation failed: %+v, want one more look", r)
	}
}

// A wait that ends passes the waiter over wherever it stands, but a head learns its attempt's
// answer first.
func TestQueueWaitsEnd(t *testing.T) {
	q := ptr(NewQueue(QueueConfig{}))
	q.Enter(at(0), 1, at(100))
	q.Enter(at(0), 2, at(50))
	q.Enter(at(0), 3, at(1000))
	r := q.Tick(at(50))
	if !slices.Equal(r.GiveUp, []uint64{2}) || r.Try != 0 {
		t.Fatalf("at 50ms: %+v, want waiter 2 given up", r)
	}
	if r := q.Tick(at(100)); len(r.GiveUp) != 0 {
		t.Fatalf("a head with an attempt in flight was given up: %+v", r)
	}
	r = q.Failed(at(120), 1, time.Second)
	if !slices.Equal(r.GiveUp, []uint64{1}) || r.Try != 3 {
		t.Fatalf("the head failed past its wait: %+v, want it given up and waiter 3 to try", r)
	}
}

// An empty queue keeps its subscription for its linger, then unsubscribes; one that never
// subscribed is dropped at once.
func TestQueueLingers(t *testing.T) {
	q := ptr(NewQueue(listening))
	q.Enter(at(0), 1, at(10_000))
	q.Failed(at(1), 1, time.Second)
	q.Confirmed(at(2))
	r := q.Held(at(3), 1, at(1003))
	if r.Drop || r.Unsubscribe || !r.Wake.Equal(at(1003)) {
		t.Fatalf("emptied: %+v, want a linger until 1003ms", r)
	}
	// Someone comes back within the linger: it sleeps on the hint, the subscription kept.
	if r := q.Enter(at(500), 2, at(10_000)); r.Try != 0 || r.Unsubscribe {
		t.Fatalf("back within the linger: %+v", r)
	}
	q.Leave(at(600), 2)
	if r := q.Tick(at(1599)); r.Unsubscribe {
		t.Fatal("unsubscribed before its linger")
	}
	if r := q.Tick(at(1600)); !r.Unsubscribe || !r.Drop {
		t.Fatalf("after the linger: %+v, want Unsubscribe and Drop", r)
	}
	q = ptr(NewQueue(QueueConfig{}))
	q.Enter(at(0), 1, at(10_000))
	if r := q.Held(at(1), 1, at(1001)); !r.Drop {
		t.Fatalf("a queue that listens to nothing emptied: %+v, want Drop", r)
	}
}

func ptr(q Queue) *Queue { return &q }

func TestLineSleepBounds(t *testing.T) {
	const ms = time.Millisecond
	grant := GrantTTL(30*time.Second, 10*time.Second, MaxGrantTTL)
	for _, c := range []struct {
		ttl        time.Duration
		subscribed bool
		want       time.Duration
	}{
		{100 * ms, true, 100 * ms},          // the holder's lock runs out first
		{20 * time.Second, true, 250 * ms},  // a queued waiter looks again within LostGrantBound
		{-1, true, 250 * ms},                // a lock without a TTL: the grant's bound, then LostGrantBound
		{100 * ms, false, UnsubscribedPoll}, // it hears no grant yet: it polls
		{0, true, ms},                       // never a busy loop
	} {
		if got := LineSleep(c.ttl, grant, LostGrantBound, c.subscribed); got != c.want {
			t.Errorf("LineSleep(%v, subscribed %v) = %v, want %v", c.ttl, c.subscribed, got, c.want)
		}
	}
	if grant != MaxGrantTTL || GrantTTL(time.Second, 100*ms, MaxGrantTTL) != 100*ms || GrantTTL(0, 0, MaxGrantTTL) != ms {
		t.Errorf("GrantTTL: %v; the least of lease, wait and the bound, at least 1 ms", grant)
	}
}

// A release that keeps its process in the reentrant line leaves no ring: the head asleep on the
// winner's hint looks again within the bound it is given, not at the hint's end.
func TestQueueInLineBoundsTheHint(t *testing.T) {
	q := NewQueue(QueueConfig{Listens: true, Linger: time.Second, ConfirmWait: 250 * time.Millisecond})
	q.Enter(at(0), 1, at(5000))
	q.Enter(at(0), 2, at(5000))
	q.Failed(at(1), 1, time.Second) // subscribes
	q.Confirmed(at(2))              // looks again
	r := q.Held(at(3), 1, at(1003)) // 2 is the head, asleep on the hint until 1003
	if r.Try != 0 || !r.Wake.Equal(at(1003)) {
		t.Fatalf("after the win: %+v, want the head asleep on the hint until 1003ms", r)
	}
	if r := q.InLine(at(300), LostGrantBound); r.Try != 0 || !r.Wake.Equal(at(550)) {
		t.Fatalf("in line at 300ms: %+v, want a wake at 550ms", r)
	}
	if r := q.Tick(at(550)); r.Try != 2 {
		t.Fatalf("at 550ms: %+v, want the head to look again", r)
	}
}
