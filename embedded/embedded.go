// Package embedded starts in-process Redis servers (miniredis) on configured addresses where no
// real Redis answers, so `go run .` works on a machine with nothing installed. TTLs run on the
// wall clock (ClockTTL), so lock leases expire in real time as on a real server.
package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// ErrUnreachable: policy never, and a configured Redis did not answer.
var ErrUnreachable = errors.New("redis unreachable")

// Servers are the in-process Redis servers that were started.
type Servers struct {
	servers []*miniredis.Miniredis
	Addrs   []string
}

// Close stops every started server.
func (s *Servers) Close() {
	for _, m := range s.servers {
		m.Close()
	}
}

// Answers reports whether something accepts TCP connections on addr.
func Answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// Start applies policy (auto, always or never; config.EmbeddedPolicy resolves the configured
// one) to every address: auto starts an in-process Redis where nothing answers, always starts one
// on every address, never only checks that each address answers (why, when set, says why never
// was chosen). password, if set, is required by the started servers too. An in-process Redis
// keeps everything in memory: whatever it holds is lost when the process ends.
func Start(policy, why string, addrs []string, password string, log *slog.Logger) (*Servers, error) {
	s := &Servers{}
	seen := map[string]bool{}
	for _, addr := range addrs {
		if seen[addr] {
			continue
		}
		seen[addr] = true
		switch policy {
		case "never":
			if !Answers(addr) {
				s.Close()
				if why != "" {
					return nil, fmt.Errorf("embedded: %w: nothing answers on %s, and no in-memory Redis is started "+
						"in its place: %s (start redis-server there, or set SECKILL_REDIS_EMBEDDED=always in a lab)", ErrUnreachable, addr, why)
				}
				return nil, fmt.Errorf("embedded: %w: nothing answers on %s and redis.embedded is never "+
					"(start redis-server there)", ErrUnreachable, addr)
			}
			continue
		case "auto":
			if Answers(addr) {
				log.Info("using redis", "addr", addr)
				continue
			}
		case "always":
		default:
			s.Close()
			return nil, fmt.Errorf("embedded: unknown policy %q", policy)
		}
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if password != "" {
			m.RequireAuth(password)
		}
		if err := m.StartAddr(addr); err != nil {
			s.Close()
			return nil, fmt.Errorf("embedded: start in-process redis on %s: %w", addr, err)
		}
		s.servers = append(s.servers, m)
		s.Addrs = append(s.Addrs, addr)
	}
	if len(s.Addrs) > 0 {
		// One line for all of them: the data Redis and the masters are one decision.
		log.Warn("started in-process redis (miniredis): in-memory, not durable; everything it holds is lost when this process ends",
			"addrs", strings.Join(s.Addrs, ","), "redis.embedded", policy)
	}
	return s, nil
}
