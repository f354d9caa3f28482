package lab

import (
	"strings"
	"testing"
	"time"
)

// TestLeaseRanOut: a safe row is put down to the machine only when a holder's lease ran out
// unrenewed during a stall of a third of the lease or more; otherwise its verdict stands.
func TestLeaseRanOut(t *testing.T) {
	const lease = 600 * time.Millisecond
	unexpected, held := Result{Verdict: Unexpected}, Result{Verdict: Held}
	for _, c := range []struct {
		name    string
		res     Result
		safe    bool
		lost    int
		stalled time.Duration
		starved bool
	}{
		{"a lost lease in a long stall", unexpected, true, 1, 367 * time.Millisecond, true},
		{"a lost lease on a quiet machine", unexpected, true, 1, 20 * time.Millisecond, false},
		{"no lost lease", unexpected, true, 0, 367 * time.Millisecond, false},
		{"an unsafe row", unexpected, false, 1, 367 * time.Millisecond, false},
		{"a row that held", held, true, 1, 367 * time.Millisecond, false},
		{"just a third", unexpected, true, 2, lease / 3, true},
	} {
		why := leaseRanOut(c.res, c.safe, c.lost, c.stalled, lease)
		if (why != "") != c.starved {
			t.Errorf("%s: %q, want starved %v", c.name, why, c.starved)
		}
		if c.starved && (!strings.Contains(why, "stalled") || !strings.Contains(why, "run out unrenewed")) {
			t.Errorf("%s: %q does not say why", c.name, why)
		}
	}
}
