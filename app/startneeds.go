package app

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"seckill/config"
	"seckill/embedded"
)

// neededAtStart is what redis.embedded=never requires to answer at start: the data Redis and the
// masters lock.mode needs, as /readyz counts them (all for multilock, a majority for redlock and
// redlock-fenced, none for the single-instance modes). A master the mode does not need may be
// down: it is logged, and a sale asking for a mode that needs it fails then (503), as /readyz
// says ("not needed by lock mode ..."). Too few masters for the mode is refused here, naming them.
func neededAtStart(cfg config.Config, log *slog.Logger) ([]string, error) {
	var need []string
	if cfg.DataMode() == "standalone" {
		need = append(need, cfg.Redis.Addr)
		if !embedded.Answers(cfg.Redis.Addr) {
			return cfg.Addresses(), nil // embedded.Start names the data Redis first
		}
	}
	var up, down []string
	for _, m := range cfg.Redis.Masters {
		if slices.Contains(up, m) || slices.Contains(down, m) {
			continue
		}
		if embedded.Answers(m) {
			up = append(up, m)
		} else {
			down = append(down, m)
		}
	}
	switch cfg.Lock.Mode {
	case "multilock":
		// Every master: embedded.Start refuses the first one down, naming it.
		return append(need, cfg.Redis.Masters...), nil
	case "redlock", "redlock-fenced":
		if n := len(up) + len(down); len(up) < n/2+1 {
			return nil, fmt.Errorf("app: %w: lock mode %s needs a majority of its %d masters (%d), and only %d answer "+
				"(nothing answers on %s; redis.embedded is never)", embedded.ErrUnreachable, cfg.Lock.Mode, n, n/2+1, len(up),
				strings.Join(down, ", "))
		}
	}
	for _, m := range down {
		log.Warn("a master does not answer; lock mode "+cfg.Lock.Mode+" does not need it, a sale in a mode that does will fail (503) while it is down",
			"addr", m)
	}
	return append(need, up...), nil
}
