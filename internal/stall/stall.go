// Package stall measures how starved the process is: a goroutine that wakes every period and
// records how late it woke. A lateness longer than a lease is a stall the lease cannot outlast
// (a loaded machine, a long GC pause, a frozen VM), and a verdict taken during it says more
// about the machine than about the lock. The lab and the explorer run a Meter beside each row
// or trial and name the longest stall in a verdict it explains.
package stall

import (
	"fmt"
	"sync"
	"time"
)

// Period is how often a Meter wakes: short beside the shortest lease the lab and the explorer
// use (50 ms), so a stall that matters is never hidden between two wake-ups.
const Period = 5 * time.Millisecond

// Meter records the longest lateness of its ticks since Start.
type Meter struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	max  time.Duration
	// extra is added to what was measured (Inject): a test's deterministic stall.
	extra time.Duration
}

// Start starts a Meter; Stop ends it.
func Start() *Meter {
	m := &Meter{stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *Meter) run() {
	defer close(m.done)
	t := time.NewTimer(Period)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-m.stop:
			m.note(time.Since(last) - Period)
			return
		case now := <-t.C:
			m.note(now.Sub(last) - Period)
			// time.Now, not the timer's time: a goroutine that is not scheduled is late too
			last = time.Now()
			m.note(last.Sub(now))
			t.Reset(Period)
		}
	}
}

func (m *Meter) note(late time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.max = max(m.max, late)
}

// Inject makes the Meter report a stall of at least d, as if the machine had stalled: a test's
// deterministic starvation, never real load.
func (m *Meter) Inject(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.extra = max(m.extra, d)
}

// Stop ends the Meter and returns the longest stall it saw (0 when it was never late).
func (m *Meter) Stop() time.Duration {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.max, m.extra, 0)
}

// Explains reports whether a stall of d could explain what happened under a lease: it is at
// least Threshold of it. A watchdog renews every third of its lease, so a stall of two thirds
// can let the lease run out between two renewals; a stall that long also bends every timing the
// lab and the explorer set in multiples of the lease.
func Explains(d, lease time.Duration) bool { return lease > 0 && d >= Threshold(lease) }

// Threshold is the shortest stall that can explain an outcome under lease: two thirds of it.
func Threshold(lease time.Duration) time.Duration { return lease * 2 / 3 }

// Why says, in a few words, how long the machine stalled against the lease.
func Why(d, lease time.Duration) string {
	return fmt.Sprintf("the machine stalled %s, over 2/3 of the %s lease", round(d), round(lease))
}

func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
