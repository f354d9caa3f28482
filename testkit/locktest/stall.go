package locktest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// stallTick is how often the stall meter looks at the clock.
const stallTick = 10 * time.Millisecond

// stallKept is how long a stall is remembered.
const stallKept = time.Minute

// meter measures how late a ticker of this process runs: the time a busy machine takes from
// every goroutine at once, the lock's among them. A bound of the contract holds on a quiet
// machine; a test adds what the machine took (LongestStall), so that it fails on the lock, not
// on the machine.
var meter struct {
	once  sync.Once
	mu    sync.Mutex
	last  time.Time // the last tick
	at    []time.Time
	stall []time.Duration
}

// WatchStalls starts the stall meter (once per process); RunParallel starts it.
func WatchStalls() {
	meter.once.Do(func() {
		meter.last = time.Now()
		go func() {
			for range time.Tick(stallTick) {
				now := time.Now() // when this goroutine ran, not when the tick was due
				meter.mu.Lock()
				if late := now.Sub(meter.last) - stallTick; late > stallTick {
					meter.at, meter.stall = append(meter.at, now), append(meter.stall, late)
				}
				meter.last = now
				for len(meter.at) > 0 && now.Sub(meter.at[0]) > stallKept {
					meter.at, meter.stall = meter.at[1:], meter.stall[1:]
				}
				meter.mu.Unlock()
			}
		}()
	})
}

// LongestStall is the longest this process went without running its ticker within the last d
// (at most a minute), the stall going on now included; 0 before WatchStalls.
func LongestStall(d time.Duration) time.Duration {
	meter.mu.Lock()
	defer meter.mu.Unlock()
	if meter.last.IsZero() {
		return 0
	}
	now := time.Now()
	longest := max(now.Sub(meter.last)-stallTick, 0)
	for i, at := range meter.at {
		if now.Sub(at) <= d {
			longest = max(longest, meter.stall[i])
		}
	}
	return longest
}

// FailUnlessStalled fails t with the message, unless this process was kept from running for at
// least bound within the last within (LongestStall): a check of a bound that tight cannot tell
// the lock from the machine then, and the test is skipped, saying why.
func FailUnlessStalled(t testing.TB, within, bound time.Duration, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if s := LongestStall(within); s >= bound {
		t.Skipf("%s; the machine stalled %s within %s, at least %s, so this says nothing of the lock", msg, s.Round(time.Millisecond), within, bound)
	}
	t.Fatal(msg)
}
