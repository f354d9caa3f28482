package app_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"seckill/app"
	"seckill/config"
	"seckill/embedded"
	"seckill/internal/modes"
	"seckill/internal/testredis"
	"seckill/lab/labapp"
)

// syncBuffer is a log sink the service's goroutines may write to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestNeverStartsWithWhatTheModeNeeds: with redis.embedded=never the start needs the data Redis
// and the masters lock.mode needs, as /readyz counts them (issue 37, item 6: a lua instance was
// refused with its three masters down while /readyz called them "not needed by lock mode lua").
func TestNeverStartsWithWhatTheModeNeeds(t *testing.T) {
	t.Parallel()
	servers := testredis.StartN(t, 3)
	data, up1, up2 := servers[0].Addr, servers[1].Addr, servers[2].Addr
	down := freeAddrs(t, 3)
	for _, c := range []struct {
		mode    string
		masters []string
		refused string // "" = starts
	}{
		{"lua", down, ""},
		{"fenced", down, ""},
		{"multilock", []string{up1, up2, down[0]}, down[0]},
		{"redlock", []string{up1, up2, down[0]}, ""},
		{"redlock", []string{up1, down[0], down[1]}, "needs a majority of its 3 masters (2), and only 1 answer"},
		{"redlock-fenced", down, "only 0 answer"},
	} {
		cfg, err := config.Load("", func(string) string { return "" }, modes.Names())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Redis.Embedded, cfg.Lab.Enabled, cfg.Lock.Mode = config.EmbeddedNever, false, c.mode
		cfg.Redis.Addr, cfg.Redis.Masters = data, c.masters
		if err := cfg.Validate(modes.Names()); err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		a, err := app.New(t.Context(), cfg, app.NewLogger(&logs, "warn"), labapp.Lab{})
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s with masters %v: refused: %v", c.mode, c.masters, err)
		case c.refused == "":
			ready, rerr := a.Service.Ready(t.Context())
			if rerr != nil {
				t.Errorf("%s: started but not ready: %v %v", c.mode, rerr, ready)
			}
			if c.mode == "lua" && !strings.Contains(logs.String(), "lock mode lua does not need it") {
				t.Errorf("lua: the masters down are not logged:\n%s", logs.String())
			}
			a.Close()
		case err == nil:
			a.Close()
			t.Errorf("%s with masters %v: started, want refused (%s)", c.mode, c.masters, c.refused)
		case !errors.Is(err, embedded.ErrUnreachable) || !strings.Contains(err.Error(), c.refused):
			t.Errorf("%s: refused with %v, want unreachable naming %q", c.mode, err, c.refused)
		}
	}
}
