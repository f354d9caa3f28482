package simulate

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fault names: the explorer's where they mean the same, and two only a scheduler can cause.
const (
	FaultCrash         = "crash"                // a client's later commands never arrive
	FaultPause         = "pause"                // a client stops for Pause (past its lease) while the clock moves
	FaultMasterDown    = "master-down"          // a master answers nothing for Down, then comes back with its data
	FaultRestartEmpty  = "master-restart-empty" // a master restarts at once, without its data
	FaultClockFast     = "clock-fast"           // a master's clock jumps Jump ahead: its keys expire early
	FaultPubsubLost    = "pubsub-lost"          // a pub/sub message is never delivered
	FaultPubsubDelayed = "pubsub-delayed"       // a pub/sub message arrives Delay late
	FaultReplyLost     = "reply-lost"           // an attempt runs, and its reply never comes (a connection breaks under it)
)

// AllFaults lists every fault, in the order choices are offered.
var AllFaults = []string{FaultCrash, FaultPause, FaultMasterDown, FaultRestartEmpty, FaultClockFast, FaultPubsubLost, FaultPubsubDelayed, FaultReplyLost}

// Config bounds one simulation. Durations are virtual.
type Config struct {
	Kind      string
	Clients   int
	Rounds    int // acquire, work, release: this many times per client
	Faults    []string
	MaxFaults int
	MaxSteps  int // a run longer than this stops (counted, not a violation)
	// PerProcess clients share a process, in order (1 when 0; more for SharedKinds only): its
	// queue, subscription and lock/core.Line, so a release passes the lock to a waiter of its own
	// process as the library's does. A crash or a pause stops a whole process.
	PerProcess int

	Lease, Work, Wait, Retry time.Duration
	Pause, Down, Jump, Delay time.Duration
}

// Defaults fills what is zero: a 1 s lease, 300 ms of work, a 3 s wait, polling every 100 ms.
func (c Config) Defaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Lease, time.Second)
	def(&c.Work, 300*time.Millisecond)
	def(&c.Wait, 3*time.Second)
	def(&c.Retry, 100*time.Millisecond)
	def(&c.Pause, 2500*time.Millisecond)
	def(&c.Down, 2*time.Second)
	def(&c.Jump, 2*time.Second)
	def(&c.Delay, 1500*time.Millisecond)
	if c.Clients == 0 {
		c.Clients = 2
	}
	if c.PerProcess == 0 {
		c.PerProcess = 1
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = 300
	}
	return c
}

// SharedKinds are the kinds whose clients may share a process (Config.PerProcess): their waiters
// wait in the process's core.Queue and a message to the process rings it (readwrite: process 1's
// clients write, the others' read; multilock: a queue and a subscription for each part; fair: a
// queue for each waiter, at most 3 to a process, one heartbeat, and its releases hand over within
// the process).
var SharedKinds = []string{"lua", "fenced", "reentrant", "readwrite", "multilock", "redlock", "redlock-fenced", "semaphore", "permits", "fair"}

// Validate names what is wrong with c.
func (c Config) Validate() error {
	if _, ok := kinds[c.Kind]; !ok {
		return fmt.Errorf("simulate: unknown kind %q (known: %v)", c.Kind, KindNames())
	}
	if c.Clients < 1 || c.Clients > 5 {
		return fmt.Errorf("simulate: %d clients: want 1 to 5", c.Clients)
	}
	if c.PerProcess < 1 || c.PerProcess > 1 && !slices.Contains(SharedKinds, c.Kind) || c.Kind == "fair" && c.PerProcess > 3 {
		return fmt.Errorf("simulate: %d clients per process: want 1, or more for %s (fair: up to 3)", c.PerProcess, strings.Join(SharedKinds, ", "))
	}
	for _, f := range c.Faults {
		if !slices.Contains(AllFaults, f) {
			return fmt.Errorf("simulate: unknown fault %q (known: %v, or none)", f, AllFaults)
		}
	}
	return nil
}
