package redisproc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestSentinelsMoveOffATakenPort: a port picked free that another process takes before the
// sentinel binds it (tests start servers in parallel) costs a new set of ports, not the run.
func TestSentinelsMoveOffATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	sentinelPort = func() (int, error) {
		picks++
		if picks == 2 { // the second sentinel of the first set
			return takenPort, nil
		}
		return FreePort()
	}
	defer func() { sentinelPort = FreePort }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := StartReplicated(ctx, ReplicatedOptions{})
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("a taken port failed the start: %v", err)
	}
	defer r.Close()
	if picks <= len(r.Sentinels) {
		t.Fatalf("%d ports picked for %d sentinels: the taken port was never tried", picks, len(r.Sentinels))
	}
	for _, s := range r.Sentinels {
		if s.Addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(takenPort)) {
			t.Fatalf("a sentinel claims the taken port %d", takenPort)
		}
	}
}
