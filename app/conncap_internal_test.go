package app

import (
	"io"
	"testing"

	"seckill/config"
	"seckill/internal/modes"
)

// server.maxConns is lowered to what the descriptor limit leaves after the Redis pools.
func TestConnCapFitsTheDescriptorLimit(t *testing.T) {
	cfg, err := config.Load("", func(string) string { return "" }, modes.Names())
	if err != nil {
		t.Fatal(err)
	}
	log := NewLogger(io.Discard, "error")
	reserve := cfg.Redis.PoolSize*(2+len(cfg.Redis.Masters)) + 128
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{0, cfg.Server.MaxConns}, {1 << 20, cfg.Server.MaxConns},
		{1024, 1024 - reserve}, {uint64(reserve), 1},
	} {
		if got := connCap(cfg, c.limit, log); got != c.want {
			t.Errorf("limit %d: cap %d, want %d", c.limit, got, c.want)
		}
	}
}
