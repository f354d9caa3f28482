package stall

import (
	"strings"
	"testing"
	"time"
)

func TestInjectedStallIsReported(t *testing.T) {
	m := Start()
	m.Inject(1400 * time.Millisecond)
	got := m.Stop()
	if got < 1400*time.Millisecond {
		t.Fatalf("Stop = %s, want at least the injected 1.4s", got)
	}
	if !Explains(got, time.Second) {
		t.Errorf("a %s stall should explain an outcome under a 1s lease", got)
	}
	if w := Why(got, time.Second); !strings.HasPrefix(w, "the machine stalled 1.4") || !strings.Contains(w, "1s lease") {
		t.Errorf("Why = %q", w)
	}
}

func TestShortStallExplainsNothing(t *testing.T) {
	if Explains(Threshold(time.Second)-time.Millisecond, time.Second) {
		t.Error("a stall under the threshold explains nothing")
	}
	if !Explains(Threshold(time.Second), time.Second) {
		t.Error("a stall at the threshold explains the outcome")
	}
	if Explains(time.Hour, 0) {
		t.Error("no lease, nothing to explain")
	}
}

// TestBlockedMeterSeesTheStall blocks the meter's own goroutine by holding its lock, the way a
// machine that does not schedule it would, and requires the lateness to be seen.
func TestBlockedMeterSeesTheStall(t *testing.T) {
	m := Start()
	const block = 100 * time.Millisecond
	m.mu.Lock()
	time.Sleep(block)
	m.mu.Unlock()
	if got := m.Stop(); got < block/2 {
		t.Fatalf("Stop = %s after the meter was held for %s", got, block)
	}
}
