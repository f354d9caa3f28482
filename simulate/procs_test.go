package simulate

import (
	"testing"
	"time"
)

// TestSharedProcess: two clients in one process and one in another (Config.PerProcess 2), for lua
// and fenced: every schedule is searched and none breaks a property.
func TestSharedProcess(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"lua", "fenced"} {
		start := time.Now()
		r := mustSim(t, Config{Kind: k, Clients: 3, PerProcess: 2}).Exhaustive(t.Context())
		if r.Violations != 0 || !r.Complete {
			t.Errorf("%s: %d violations (complete %v), shortest %+v", k, r.Violations, r.Complete, r.Shortest)
		}
		t.Logf("%s: %d schedules, %d states in %v", k, r.Schedules, r.States, time.Since(start).Round(time.Millisecond))
	}
}
