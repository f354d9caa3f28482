package core

import (
	"testing"
	"time"
)

// The pause after a failure on a server that may serve again soon doubles from 10 ms to 200 ms,
// and the acquisition tries again only with more than the pause left of its wait.
func TestRidePause(t *testing.T) {
	want := []time.Duration{10, 20, 40, 80, 160, 200, 200, 200}
	for n, w := range want {
		if got := RidePause(n); got != w*time.Millisecond {
			t.Errorf("RidePause(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if RidePause(63) != 200*time.Millisecond {
		t.Error("RidePause overflows past its cap")
	}
	if !Rides(11*time.Millisecond, 10*time.Millisecond) || Rides(10*time.Millisecond, 10*time.Millisecond) {
		t.Error("Rides must ask for more than the pause left")
	}
}
