package core

// Mutant is a deliberate fault in one of the core's decisions. The simulator's tests switch one
// on at a time and show that a search of `seckill simulate` finds it within seconds
// (simulate/mutants_test.go): the mutants are the measure of the simulator, which runs this core.
// The library never switches one on.
type Mutant int32

// The mutants.
const (
	Sound                Mutant = iota // no mutation
	NoRenewal                          // a watchdog never renews
	NeverLost                          // a lease never runs out by its own clock (only a refused renewal loses it)
	NoPush                             // a lock handed over short is never pushed out to its lease
	NoWake                             // a release's ring does not wake the head of the queue
	NoRelook                           // a failed attempt's answer does not bound the head's sleep
	NoLookAfterSubscribe               // a head that has just subscribed does not look again when it is confirmed
	NoCohort                           // a release passes the lock to its process's next waiter before the Redis line however many turns the process had
	NoDeadlineTimer                    // a queue arms no timer for its waiters' deadlines: a wait ends at the next event after it
	NoInLineBound                      // a release that keeps its process in the reentrant line leaves the next head asleep on its holder's hint
	NoBeatRing                         // a fair heartbeat does not ring a waiter of its process that the lock was handed to (F7)
	NoSettle                           // a win after a lost reply gives back no hold the lost attempt counted (ExtraHolds)
	NoLeaveUnanswered                  // a line waiter leaves the Redis line only when an answer said it queued, not when one never came
	NoKeepPlace                        // a fair waiter that rides a failover leaves the queue at once (FairLeavesNow)
	NoTokenStep                        // a Redlock fencing token is the largest counter read, not one past it
)

// Mutants lists every mutant but Sound.
var Mutants = []Mutant{NoRenewal, NeverLost, NoPush, NoWake, NoRelook, NoLookAfterSubscribe, NoCohort, NoDeadlineTimer, NoInLineBound, NoBeatRing, NoSettle, NoLeaveUnanswered, NoKeepPlace, NoTokenStep}

func (m Mutant) String() string {
	switch m {
	case NoRenewal:
		return "no-renewal"
	case NeverLost:
		return "never-lost"
	case NoPush:
		return "no-push"
	case NoWake:
		return "no-wake"
	case NoRelook:
		return "no-relook"
	case NoLookAfterSubscribe:
		return "no-look-after-subscribe"
	case NoCohort:
		return "no-cohort"
	case NoDeadlineTimer:
		return "no-deadline-timer"
	case NoInLineBound:
		return "no-in-line-bound"
	case NoBeatRing:
		return "no-beat-ring"
	case NoSettle:
		return "no-settle"
	case NoLeaveUnanswered:
		return "no-leave-unanswered"
	case NoKeepPlace:
		return "no-keep-place"
	case NoTokenStep:
		return "no-token-step"
	}
	return "sound"
}

// mutant is the one switched on. It is a plain variable: Mutate is for a test that runs alone
// (not in parallel), before or after every other user of the core in its process.
var mutant = Sound

// Mutate switches m on for every Life in the process until undo is called: for tests of the
// simulator only, one at a time, in a test that does not run in parallel with others.
func Mutate(m Mutant) (undo func()) {
	mutant = m
	return func() { mutant = Sound }
}

func mutated(m Mutant) bool { return mutant == m }
