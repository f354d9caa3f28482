// Package config reads the service configuration once, from config/application.yaml (or the file
// named by --config) overlaid with SECKILL_<SECTION>_<KEY> environment variables, into a typed
// struct. No other package reads viper.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// DefaultPath is where the service looks for its configuration when --config is not given.
const DefaultPath = "config/application.yaml"

//go:embed application.yaml
var defaults []byte

// Embedded Redis policies (redis.embedded).
const (
	EmbeddedAuto   = "auto"
	EmbeddedAlways = "always"
	EmbeddedNever  = "never"
)

// The quick start's local addresses: where redis.embedded=auto may start an in-process Redis.
var (
	QuickStartData    = "127.0.0.1:6379"
	QuickStartMasters = []string{"127.0.0.1:6381", "127.0.0.1:6382", "127.0.0.1:6383"}
)

// MaxStock bounds inventory.stock and POST /inventory/reset?stock=.
const MaxStock = 1_000_000_000

// Config is the whole configuration of one service instance.
type Config struct {
	Server    Server    `mapstructure:"server"`
	Redis     Redis     `mapstructure:"redis"`
	Inventory Inventory `mapstructure:"inventory"`
	Lock      Lock      `mapstructure:"lock"`
	Checkout  Checkout  `mapstructure:"checkout"`
	Lab       Lab       `mapstructure:"lab"`
	Log       Log       `mapstructure:"log"`
}

// Server configures the HTTP side.
type Server struct {
	Host       string `mapstructure:"host"`
	Port       int    `mapstructure:"port"`
	Instance   string `mapstructure:"instance"`
	AdminToken string `mapstructure:"admintoken"`
	// MaxInFlight bounds the sales served at once by this process; the excess is answered 503
	// at once (Retry-After), instead of queueing behind the lock.
	MaxInFlight int `mapstructure:"maxinflight"`
	// MaxConns bounds the connections this process keeps open; one past it is answered 503 and
	// closed at once, and the open ones are served as before.
	MaxConns int `mapstructure:"maxconns"`
	// IdleTimeout closes a keep-alive connection that sends no request for this long.
	IdleTimeout     time.Duration `mapstructure:"idletimeout"`
	ReadTimeout     time.Duration `mapstructure:"readtimeout"`
	WriteTimeout    time.Duration `mapstructure:"writetimeout"`
	ShutdownTimeout time.Duration `mapstructure:"shutdowntimeout"`
}

// Redis names the data Redis and the independent lock masters.
type Redis struct {
	Addr     string   `mapstructure:"addr"`
	Password string   `mapstructure:"password"`
	DB       int      `mapstructure:"db"`
	Masters  []string `mapstructure:"masters"`
	Embedded string   `mapstructure:"embedded"`
	// SentinelMaster and SentinelAddrs select a Sentinel-managed data Redis instead of Addr.
	SentinelMaster string   `mapstructure:"sentinelmaster"`
	SentinelAddrs  []string `mapstructure:"sentineladdrs"`
	// ClusterAddrs selects a Redis Cluster as the data store instead of Addr.
	ClusterAddrs []string `mapstructure:"clusteraddrs"`
	PoolSize     int      `mapstructure:"poolsize"`
}

// Inventory names the stock key and the stock a reset puts in.
type Inventory struct {
	Key   string   `mapstructure:"key"`
	SKUs  []string `mapstructure:"skus"`
	Stock int64    `mapstructure:"stock"`
}

// Lock chooses the lock mode and its timings.
type Lock struct {
	Mode string `mapstructure:"mode"`
	// Lease is the locks' default lease; 0: the lock library's default (app.LockOptions).
	Lease time.Duration `mapstructure:"lease"`
	Wait  time.Duration `mapstructure:"wait"`
	// WaitReplicas > 0 makes the locks on the data Redis WAIT for that many of its replicas after
	// each acquisition, within WaitReplicasTimeout (0: the lock library's default); fewer
	// acknowledgements undo it (row 12).
	WaitReplicas        int           `mapstructure:"waitreplicas"`
	WaitReplicasTimeout time.Duration `mapstructure:"waitreplicastimeout"`
	// AllowedModes are the modes a sale may use without the lab's operator (with lab.enabled
	// false: the only ones it may use). Mode must be one of them when the lab is off.
	AllowedModes []string `mapstructure:"allowedmodes"`
	// SubscriptionMode is how modes reentrant, fair and fenced announce a release and wait for one:
	// auto (sharded pub/sub on a Redis 7 cluster, classic elsewhere, as Redisson's AUTO),
	// sharded or classic (docs/interop.md).
	SubscriptionMode string `mapstructure:"subscriptionmode"`
	// FairThreadWait is mode fair's thread wait (0: each sale's wait); it must equal Redisson's
	// fairLockWaitTimeout, or the Java side's tryLock wait, when Java clients share the lock.
	FairThreadWait time.Duration `mapstructure:"fairthreadwait"`
	// FencedLayout is mode fenced's layout in Redis: line (the default: one waiter handed the
	// lock at each release) or redisson (Redisson RFencedLock's hash and token counter, to share
	// the lock and its tokens with Java services; docs/interop.md).
	FencedLayout string `mapstructure:"fencedlayout"`
}

// Checkout bounds the buyers of one SKU in checkout at once, across every instance (an
// expirable semaphore on the data Redis; service/checkout.go).
type Checkout struct {
	// Limit is the number of checkout permits of each SKU; 0: no limit.
	Limit int `mapstructure:"limit"`
	// Wait bounds a buyer's wait for a permit; 0: one attempt.
	Wait time.Duration `mapstructure:"wait"`
}

// MaxCheckoutLimit bounds checkout.limit.
const MaxCheckoutLimit = 1_000_000

// Lab enables fault injection and the scenario lab, with upper bounds on every fault.
type Lab struct {
	Enabled   bool          `mapstructure:"enabled"`
	MaxWork   time.Duration `mapstructure:"maxwork"`
	MaxFreeze time.Duration `mapstructure:"maxfreeze"`
	MaxPause  time.Duration `mapstructure:"maxpause"`
	MaxLease  time.Duration `mapstructure:"maxlease"`
}

// Log sets the log level.
type Log struct {
	Level string `mapstructure:"level"`
}

// ErrInvalid is wrapped by every validation error; the message names the offending key.
var ErrInvalid = errors.New("invalid configuration")

// Load reads the configuration. path may be empty: then DefaultPath is used when it exists and the
// built-in defaults otherwise. getenv supplies the environment (os.Getenv in production) and
// modes lists the valid lock modes.
func Load(path string, getenv func(string) string, modes []string) (Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(defaults)); err != nil {
		return Config{}, fmt.Errorf("config: built-in defaults: %w", err)
	}
	file := path
	if file == "" {
		if _, err := os.Stat(DefaultPath); err == nil {
			file = DefaultPath
		}
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return Config{}, fmt.Errorf("config: file %s does not exist: %w", file, err)
			}
			return Config{}, fmt.Errorf("config: read %s: %w", file, err)
		}
		if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
			return Config{}, fmt.Errorf("config: parse %s: %w", file, err)
		}
	}
	// Environment overrides: every known key, SECKILL_SECTION_KEY.
	for _, key := range v.AllKeys() {
		name := "SECKILL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		if val := getenv(name); val != "" {
			v.Set(key, val)
		}
	}
	var cfg Config
	if err := v.Unmarshal(&cfg); err != nil {
		return Config{}, fmt.Errorf("config: %w: %w", ErrInvalid, err)
	}
	if err := cfg.Validate(modes); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks every value and fills derived defaults (the instance name).
func (c *Config) Validate(modes []string) error {
	bad := func(key string, format string, args ...any) error {
		return fmt.Errorf("config: %w: %s (env SECKILL_%s): %s", ErrInvalid, key,
			strings.ToUpper(strings.ReplaceAll(key, ".", "_")), fmt.Sprintf(format, args...))
	}
	if c.Server.Port < 1 || c.Server.Port > 65535 {
		return bad("server.port", "%d is out of range 1..65535", c.Server.Port)
	}
	if c.Server.Instance == "" {
		c.Server.Instance = fmt.Sprintf("seckill-%d", c.Server.Port)
	}
	for key, d := range map[string]time.Duration{
		"server.readTimeout": c.Server.ReadTimeout, "server.writeTimeout": c.Server.WriteTimeout,
		"server.shutdownTimeout": c.Server.ShutdownTimeout, "server.idleTimeout": c.Server.IdleTimeout,
		"lab.maxWork": c.Lab.MaxWork, "lab.maxFreeze": c.Lab.MaxFreeze, "lab.maxPause": c.Lab.MaxPause,
		"lab.maxLease": c.Lab.MaxLease,
	} {
		if d <= 0 {
			return bad(key, "%s must be a positive duration such as 30s", d)
		}
	}
	if c.Lock.Lease < 0 {
		return bad("lock.lease", "%s must not be negative (0: the lock library's default, 30s)", c.Lock.Lease)
	}
	if c.Lock.Wait < 0 {
		return bad("lock.wait", "%s must not be negative", c.Lock.Wait)
	}
	switch c.Lock.SubscriptionMode {
	case "auto", "sharded", "classic":
	default:
		return bad("lock.subscriptionMode", "%q is not one of auto, sharded, classic", c.Lock.SubscriptionMode)
	}
	switch c.Lock.FencedLayout {
	case "line", "redisson":
	default:
		return bad("lock.fencedLayout", "%q is not one of line, redisson", c.Lock.FencedLayout)
	}
	if c.Lock.FairThreadWait < 0 {
		return bad("lock.fairThreadWait", "%s must not be negative", c.Lock.FairThreadWait)
	}
	if c.Lock.WaitReplicas < 0 || c.Lock.WaitReplicas > 100 {
		return bad("lock.waitReplicas", "%d is out of range 0..100", c.Lock.WaitReplicas)
	}
	if c.Lock.WaitReplicasTimeout < 0 || c.Lock.WaitReplicasTimeout > time.Minute {
		return bad("lock.waitReplicasTimeout", "%s must be a duration of at most 1m, such as 1s (0: the lock library's default, 1s)", c.Lock.WaitReplicasTimeout)
	}
	if c.Checkout.Limit < 0 || c.Checkout.Limit > MaxCheckoutLimit {
		return bad("checkout.limit", "%d is out of range 0..%d (0: no limit)", c.Checkout.Limit, MaxCheckoutLimit)
	}
	if c.Checkout.Wait < 0 || c.Checkout.Wait > time.Minute {
		return bad("checkout.wait", "%s must be a duration of at most 1m, such as 1s (0s: one attempt)", c.Checkout.Wait)
	}
	if c.Redis.Addr == "" {
		return bad("redis.addr", "must not be empty")
	}
	if len(c.Redis.Masters) == 0 {
		return bad("redis.masters", "at least one master address is needed")
	}
	for i, m := range c.Redis.Masters {
		c.Redis.Masters[i] = strings.TrimSpace(m)
		if c.Redis.Masters[i] == "" {
			return bad("redis.masters", "entry %d is empty", i)
		}
	}
	if c.Redis.DB < 0 || c.Redis.DB > 15 {
		return bad("redis.db", "%d is out of range 0..15", c.Redis.DB)
	}
	if c.Redis.PoolSize < 1 || c.Redis.PoolSize > 10_000 {
		return bad("redis.poolSize", "%d is out of range 1..10000", c.Redis.PoolSize)
	}
	switch c.Redis.Embedded {
	case EmbeddedAuto, EmbeddedNever:
	case EmbeddedAlways:
		if !c.Lab.Enabled {
			return bad("redis.embedded", "always starts an in-memory Redis, which loses every sale when the process ends; "+
				"lab.enabled=false is the public posture, which never runs one: use real Redis servers (never)")
		}
	default:
		return bad("redis.embedded", "%q is not one of auto, always, never", c.Redis.Embedded)
	}
	if c.Inventory.Key == "" || strings.ContainsAny(c.Inventory.Key, "{} \t\r\n") {
		return bad("inventory.key", "%q must be non-empty without braces or spaces", c.Inventory.Key)
	}
	for i, sku := range c.Inventory.SKUs {
		sku = strings.TrimSpace(sku)
		c.Inventory.SKUs[i] = sku
		if sku == "" || strings.ContainsAny(sku, "{} \t\r\n") || len(sku) > 128 {
			return bad("inventory.skus", "entry %d (%q) must be non-empty, at most 128 characters, without braces or spaces", i, sku)
		}
	}
	if len(c.Inventory.SKUs) > 0 && !slices.Contains(c.Inventory.SKUs, c.Inventory.Key) {
		c.Inventory.SKUs = append([]string{c.Inventory.Key}, c.Inventory.SKUs...)
	}
	seen := map[string]bool{}
	c.Inventory.SKUs = slices.DeleteFunc(c.Inventory.SKUs, func(sku string) bool {
		dup := seen[sku]
		seen[sku] = true
		return dup
	})
	if (c.Redis.SentinelMaster == "") != (len(c.Redis.SentinelAddrs) == 0) {
		return bad("redis.sentinelMaster", "Sentinel needs both redis.sentinelMaster and redis.sentinelAddrs")
	}
	if c.Redis.SentinelMaster != "" && len(c.Redis.ClusterAddrs) > 0 {
		return bad("redis.clusterAddrs", "choose either Sentinel or Cluster for the data store, not both")
	}
	if c.Inventory.Stock < 0 || c.Inventory.Stock > MaxStock {
		return bad("inventory.stock", "%d is out of range 0..%d", c.Inventory.Stock, MaxStock)
	}
	if modes != nil && !slices.Contains(modes, c.Lock.Mode) {
		return bad("lock.mode", "unknown mode %q; valid modes: %s", c.Lock.Mode, strings.Join(modes, ", "))
	}
	if len(c.Lock.AllowedModes) == 0 {
		return bad("lock.allowedModes", "must list at least one mode (the default lists the safe ones)")
	}
	for i, m := range c.Lock.AllowedModes {
		m = strings.TrimSpace(m)
		c.Lock.AllowedModes[i] = m
		if modes != nil && !slices.Contains(modes, m) {
			return bad("lock.allowedModes", "entry %d: unknown mode %q; valid modes: %s", i, m, strings.Join(modes, ", "))
		}
	}
	if !c.Lab.Enabled && !slices.Contains(c.Lock.AllowedModes, c.Lock.Mode) {
		return bad("lock.mode", "%q is not in lock.allowedModes (%s), the only modes a sale may use with lab.enabled=false",
			c.Lock.Mode, strings.Join(c.Lock.AllowedModes, ", "))
	}
	if c.Server.MaxConns < 1 || c.Server.MaxConns > 1_000_000 {
		return bad("server.maxConns", "%d is out of range 1..1000000", c.Server.MaxConns)
	}
	if c.Server.MaxInFlight < 1 || c.Server.MaxInFlight > 1_000_000 {
		return bad("server.maxInFlight", "%d is out of range 1..1000000", c.Server.MaxInFlight)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	return nil
}

// DataMode tells how the data store is reached.
func (c Config) DataMode() string {
	switch {
	case len(c.Redis.ClusterAddrs) > 0:
		return "cluster"
	case c.Redis.SentinelMaster != "":
		return "sentinel"
	default:
		return "standalone"
	}
}

// Addresses lists every configured Redis address an in-process Redis may stand in for: the
// standalone data Redis (not a Sentinel or Cluster one) and the masters.
func (c Config) Addresses() []string {
	if c.DataMode() != "standalone" {
		return slices.Clone(c.Redis.Masters)
	}
	return append([]string{c.Redis.Addr}, c.Redis.Masters...)
}

// EmbeddedPolicy resolves redis.embedded to what is done: always and never as they say; auto
// starts an in-process Redis where nothing answers only for the two-command quick start (the lab
// on, a standalone data Redis and the masters on their default local addresses,
// QuickStartData and QuickStartMasters), and is never anywhere else, so a deployment whose
// Redis is down at start fails fast instead of selling into memory. why says why auto resolved to
// never ("" otherwise).
func (c Config) EmbeddedPolicy() (policy, why string) {
	if c.Redis.Embedded != EmbeddedAuto {
		return c.Redis.Embedded, ""
	}
	switch {
	case !c.Lab.Enabled:
		return EmbeddedNever, "lab.enabled=false, the public posture, never runs an in-memory Redis"
	case c.DataMode() != "standalone":
		return EmbeddedNever, "the data Redis is a " + c.DataMode()
	case c.Redis.Addr != QuickStartData || !slices.Equal(c.Redis.Masters, QuickStartMasters):
		return EmbeddedNever, fmt.Sprintf("redis.addr and redis.masters are not the quick start's local %s and %s",
			QuickStartData, strings.Join(QuickStartMasters, ","))
	}
	return EmbeddedAuto, ""
}

// SKUs lists every SKU on sale, the default first.
func (c Config) SKUs() []string {
	if len(c.Inventory.SKUs) == 0 {
		return []string{c.Inventory.Key}
	}
	return c.Inventory.SKUs
}
