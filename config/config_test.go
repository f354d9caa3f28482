package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/config"
)

var modes = []string{"none", "lua", "atomic", "reentrant", "fair", "fenced", "multilock", "redlock", "redlock-fenced"}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	cfg, err := config.Load("", env(nil), modes)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Port != 8080 || cfg.Inventory.Key != "inventory001" || cfg.Inventory.Stock != 100 {
		t.Fatalf("defaults: %+v", cfg)
	}
	// The lab is open by default (no token): only this machine may reach it.
	if cfg.Server.Host != "127.0.0.1" || cfg.Server.AdminToken != "" || !cfg.Lab.Enabled {
		t.Fatalf("host %q, token set %v, lab %v: want 127.0.0.1, none, on", cfg.Server.Host, cfg.Server.AdminToken != "", cfg.Lab.Enabled)
	}
	if cfg.Lock.Lease != 0 || cfg.Lock.WaitReplicasTimeout != 0 || cfg.Lock.Wait != 5*time.Second || cfg.Lock.Mode != "lua" ||
		cfg.Lock.SubscriptionMode != "auto" || cfg.Lock.FairThreadWait != 0 || cfg.Lock.FencedLayout != "line" {
		t.Fatalf("lock defaults: %+v", cfg.Lock)
	}
	want := []string{"127.0.0.1:6381", "127.0.0.1:6382", "127.0.0.1:6383"}
	if strings.Join(cfg.Redis.Masters, ",") != strings.Join(want, ",") {
		t.Fatalf("masters %v", cfg.Redis.Masters)
	}
	if cfg.Server.Instance != "seckill-8080" || cfg.Redis.Embedded != "auto" {
		t.Fatalf("instance %q embedded %q", cfg.Server.Instance, cfg.Redis.Embedded)
	}
	if cfg.Checkout.Limit != 256 || cfg.Checkout.Wait != time.Second {
		t.Fatalf("checkout defaults: %+v, want a limit of 256 and a wait of 1s", cfg.Checkout)
	}
}

// checkout.limit=0 switches the limit off; the environment sets both keys.
func TestCheckoutLimitFromTheEnvironment(t *testing.T) {
	cfg, err := config.Load("", env(map[string]string{"SECKILL_CHECKOUT_LIMIT": "0", "SECKILL_CHECKOUT_WAIT": "250ms"}), modes)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Checkout.Limit != 0 || cfg.Checkout.Wait != 250*time.Millisecond {
		t.Fatalf("checkout %+v, want limit 0 (off) and wait 250ms", cfg.Checkout)
	}
}

func TestShippedFileMatchesBuiltIn(t *testing.T) {
	cfg, err := config.Load("application.yaml", env(nil), modes)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Port != 8080 {
		t.Fatalf("port %d", cfg.Server.Port)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	cfg, err := config.Load("", env(map[string]string{
		"SECKILL_SERVER_PORT":       "9091",
		"SECKILL_LOCK_MODE":         "atomic",
		"SECKILL_LOCK_LEASE":        "1500ms",
		"SECKILL_REDIS_MASTERS":     "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005",
		"SECKILL_INVENTORY_STOCK":   "7",
		"SECKILL_SERVER_ADMINTOKEN": "s3cret",
		"SECKILL_LAB_ENABLED":       "false",
	}), modes)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Port != 9091 || cfg.Lock.Mode != "atomic" || cfg.Lock.Lease != 1500*time.Millisecond ||
		len(cfg.Redis.Masters) != 5 || cfg.Inventory.Stock != 7 || cfg.Server.AdminToken != "s3cret" || cfg.Lab.Enabled {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
	if cfg.Server.Instance != "seckill-9091" {
		t.Fatalf("instance %q", cfg.Server.Instance)
	}
}

func TestConfigFileFlag(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("server:\n  port: 9999\nlock:\n  mode: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, env(nil), modes)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Port != 9999 || cfg.Lock.Mode != "none" || cfg.Inventory.Key != "inventory001" {
		t.Fatalf("file not merged over defaults: %+v", cfg)
	}
	if _, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml"), env(nil), modes); err == nil {
		t.Fatal("a missing --config file must be an error")
	}
}

func TestInvalidValuesNameTheKey(t *testing.T) {
	for _, tc := range []struct{ env, val, key string }{
		{"SECKILL_LOCK_MODE", "spinlock", "lock.mode"},
		{"SECKILL_LOCK_LEASE", "thirty", "lease"},
		{"SECKILL_LOCK_WAIT", "-1s", "lock.wait"},
		{"SECKILL_LOCK_SUBSCRIPTIONMODE", "pattern", "lock.subscriptionmode"},
		{"SECKILL_LOCK_FAIRTHREADWAIT", "-5m", "lock.fairthreadwait"},
		{"SECKILL_LOCK_FENCEDLAYOUT", "hash", "lock.fencedlayout"},
		{"SECKILL_SERVER_PORT", "70000", "server.port"},
		{"SECKILL_SERVER_PORT", "0", "server.port"},
		{"SECKILL_REDIS_EMBEDDED", "sometimes", "redis.embedded"},
		{"SECKILL_INVENTORY_STOCK", "-5", "inventory.stock"},
		{"SECKILL_LOG_LEVEL", "loud", "log.level"},
		{"SECKILL_CHECKOUT_LIMIT", "-1", "checkout.limit"},
		{"SECKILL_CHECKOUT_WAIT", "-1s", "checkout.wait"},
		{"SECKILL_CHECKOUT_WAIT", "2m", "checkout.wait"},
	} {
		t.Run(tc.env+"="+tc.val, func(t *testing.T) {
			_, err := config.Load("", env(map[string]string{tc.env: tc.val}), modes)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("not ErrInvalid: %v", err)
			}
			if !strings.Contains(strings.ToLower(err.Error()), tc.key) {
				t.Fatalf("error %q does not name %s", err, tc.key)
			}
		})
	}
}

// redis.embedded=auto starts an in-memory Redis only for the quick start: the lab on and the
// default local addresses; the lab off never runs one, and refuses always.
func TestEmbeddedPolicy(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
		why  string // part of the reason auto resolved to never
	}{
		{"quick start", nil, config.EmbeddedAuto, ""},
		{"lab off", map[string]string{"SECKILL_LAB_ENABLED": "false"}, config.EmbeddedNever, "lab.enabled=false"},
		{"another data address", map[string]string{"SECKILL_REDIS_ADDR": "10.0.0.5:6379"}, config.EmbeddedNever, "quick start"},
		{"other masters", map[string]string{"SECKILL_REDIS_MASTERS": "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"}, config.EmbeddedNever, "quick start"},
		{"sentinel", map[string]string{"SECKILL_REDIS_SENTINELMASTER": "m", "SECKILL_REDIS_SENTINELADDRS": "127.0.0.1:26379"}, config.EmbeddedNever, "sentinel"},
		{"asked for", map[string]string{"SECKILL_REDIS_EMBEDDED": "always", "SECKILL_REDIS_ADDR": "10.0.0.5:6379"}, config.EmbeddedAlways, ""},
		{"never", map[string]string{"SECKILL_REDIS_EMBEDDED": "never"}, config.EmbeddedNever, ""},
		{"never with the lab off", map[string]string{"SECKILL_REDIS_EMBEDDED": "never", "SECKILL_LAB_ENABLED": "false"}, config.EmbeddedNever, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Load("", env(c.env), modes)
			if err != nil {
				t.Fatal(err)
			}
			got, why := cfg.EmbeddedPolicy()
			if got != c.want || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
				t.Fatalf("policy %q (%q), want %q (%q)", got, why, c.want, c.why)
			}
		})
	}
	_, err := config.Load("", env(map[string]string{"SECKILL_REDIS_EMBEDDED": "always", "SECKILL_LAB_ENABLED": "false"}), modes)
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "redis.embedded") {
		t.Fatalf("always with the lab off: %v, want invalid redis.embedded", err)
	}
}
