// Package app wires the service together from its configuration: Redis clients (starting
// in-process ones when configured), the lock registry, the store, the service and the HTTP API.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/config"
	"seckill/embedded"
	"seckill/handler"
	"seckill/internal/connlimit"
	"seckill/internal/httpkit"
	"seckill/internal/modes"
	"seckill/metrics"
	"seckill/service"
	"seckill/store"
)

// App is one wired service instance.
type App struct {
	Config   config.Config
	Service  *service.Service
	Handler  http.Handler
	Log      *slog.Logger
	Data     redis.UniversalClient
	Masters  []redis.UniversalClient
	Metrics  *metrics.Metrics
	embedded *embedded.Servers
	stopLab  func() // nil without a lab
	// Locks is the lock registry the service sells with.
	Locks *modes.Registry
	// Checkout is the semaphore of the checkout permits (checkout.limit); nil when it is 0.
	Checkout *lock.ExpirableSemaphore
}

// NewLogger builds the service's logger at the configured level.
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// NewClient opens a client on one Redis address with the configured credentials.
func NewClient(cfg config.Config, addr string, db int) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{addr}, Password: cfg.Redis.Password, DB: db,
		PoolSize:    cfg.Redis.PoolSize,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		// A refused connection is an answer: fail at once instead of retrying the dial
		// (go-redis's default: 5 tries 100 ms apart), so a dead master costs Redlock nothing.
		DialerRetries: 1,
	})
}

// NewDataClient opens the data store as configured: one Redis, a Sentinel-managed master, or a
// Redis Cluster. All three are go-redis UniversalClients, so the store and the single-instance
// lock modes do not care which.
func NewDataClient(cfg config.Config) redis.UniversalClient {
	switch cfg.DataMode() {
	case "cluster":
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Redis.ClusterAddrs, Password: cfg.Redis.Password, PoolSize: cfg.Redis.PoolSize,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			ContextTimeoutEnabled: true,
			DialerRetries:         1,
		})
	case "sentinel":
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.Redis.SentinelMaster, SentinelAddrs: cfg.Redis.SentinelAddrs,
			Password: cfg.Redis.Password, DB: cfg.Redis.DB, PoolSize: cfg.Redis.PoolSize,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			ContextTimeoutEnabled: true,
			DialerRetries:         1,
			MaxRetries:            -1,
		})
	default:
		return NewClient(cfg, cfg.Redis.Addr, cfg.Redis.DB)
	}
}

// DataName describes the data store for logs and readiness.
func DataName(cfg config.Config) string {
	switch cfg.DataMode() {
	case "cluster":
		return "cluster " + strings.Join(cfg.Redis.ClusterAddrs, ",")
	case "sentinel":
		return "sentinel " + cfg.Redis.SentinelMaster + "@" + strings.Join(cfg.Redis.SentinelAddrs, ",")
	default:
		return cfg.Redis.Addr
	}
}

// Lab is the scenario lab wired beside the service (package lab/labapp builds it): app knows only
// what it does to an App, so that nothing of the lab is imported by the request path.
type Lab interface {
	// Clients installs the lab's faults on the App's clients, before the lock registry is built,
	// and returns the broken modes' knobs (the zero StepHooks with the lab off).
	Clients(a *App) modes.StepHooks
	// Routes builds the lab's routes on the App's service: what the API mounts beside its own,
	// and what stops them.
	Routes(a *App) (mount func(r gin.IRouter, kit httpkit.Kit), stop func())
}

// New wires an App. It starts in-process Redis servers as redis.embedded says. lab, when not nil,
// is wired beside the service.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, lab Lab) (*App, error) {
	log = log.With("instance", cfg.Server.Instance)
	policy, why := cfg.EmbeddedPolicy()
	addrs := cfg.Addresses()
	if policy == config.EmbeddedNever {
		// Only what lock.mode needs must answer, as /readyz counts it.
		var err error
		if addrs, err = neededAtStart(cfg, log); err != nil {
			return nil, err
		}
	}
	emb, err := embedded.Start(policy, why, addrs, cfg.Redis.Password, log)
	if err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Log: log, embedded: emb}
	a.Data = NewDataClient(cfg)
	// By role, not address: /readyz is public (the start-up line and the log name the addresses).
	pingers := map[string]service.Pinger{"data": pinger{a.Data, a.inMemory(cfg.Redis.Addr)}}
	for i, addr := range cfg.Redis.Masters {
		m := NewClient(cfg, addr, 0)
		a.Masters = append(a.Masters, m)
		pingers[fmt.Sprintf("master%d", i+1)] = pinger{m, a.inMemory(addr)}
	}
	deps := modes.Deps{Data: a.Data, Masters: a.Masters, InstanceID: uuid.NewString(), Options: LockOptions(cfg.Lock, log)}
	if lab != nil {
		deps.Steps = lab.Clients(a)
	}
	if err := checkAllowed(cfg.Lock.AllowedModes); err != nil {
		a.Close()
		return nil, err
	}
	a.Locks, err = modes.NewRegistry(deps)
	if err != nil {
		a.Close()
		return nil, err
	}
	st := store.New(a.Data)
	for _, sku := range cfg.SKUs() {
		created, err := st.EnsureStock(ctx, sku, cfg.Inventory.Stock)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("app: initialise %s on %s: %w", sku, DataName(cfg), err)
		}
		if created {
			// expected on a fresh Redis (the in-process one, every start): not a warning
			log.Info("a fresh SKU: created its stock from inventory.stock", "sku", sku, "stock", cfg.Inventory.Stock)
		}
	}
	a.Service = service.New(st, a.Locks, Settings(cfg), pingers, log)
	if cfg.Checkout.Limit > 0 {
		// On the data Redis, beside the stock, announcing releases as lock.subscriptionMode says;
		// each permit's lease is its sale's own.
		if a.Checkout, err = lock.NewExpirableSemaphore(a.Data, LockOptions(cfg.Lock, log)...); err != nil {
			a.Close()
			return nil, fmt.Errorf("app: checkout.limit: %w", err)
		}
		a.Service.SetCheckout(a.Checkout)
		if err := a.Service.EnsureCheckout(ctx); err != nil {
			a.Close()
			return nil, fmt.Errorf("app: checkout.limit on %s: %w", DataName(cfg), err)
		}
	}
	a.Metrics = metrics.New()
	a.Service.SetObserver(a.Metrics)
	opts := handler.Options{AdminToken: cfg.Server.AdminToken, Logger: log, Metrics: a.Metrics}
	if lab != nil {
		opts.Mount, a.stopLab = lab.Routes(a)
	}
	a.Handler = handler.New(a.Service, opts)
	return a, nil
}

// LockOptions are the lock library's options for the configuration's lock.*: the one place the
// configuration becomes options. What is left at its zero value is not given, so the library's
// defaults hold (a lease of 30 s, a 1 s wait for replicas); the options only some kinds honour are
// lock.Option.Optional, so every constructor can be given all of them.
func LockOptions(c config.Lock, log *slog.Logger) []lock.Option {
	opts := []lock.Option{lock.WithLogger(log)}
	if c.Lease > 0 {
		opts = append(opts, lock.WithLease(c.Lease))
	}
	if c.WaitReplicas > 0 {
		opts = append(opts, lock.WithReplicas(c.WaitReplicas, c.WaitReplicasTimeout).Optional())
	}
	switch c.SubscriptionMode {
	case "sharded":
		opts = append(opts, lock.WithShardedPubSub(true).Optional())
	case "classic":
		opts = append(opts, lock.WithShardedPubSub(false).Optional())
	}
	if c.FairThreadWait > 0 {
		opts = append(opts, lock.WithThreadWait(c.FairThreadWait).Optional())
	}
	if c.FencedLayout == "redisson" {
		opts = append(opts, lock.WithRFencedLockLayout().Optional())
	}
	return opts
}

// Settings derives the service settings from the configuration.
func Settings(cfg config.Config) service.Settings {
	return service.Settings{
		Instance: cfg.Server.Instance, SKU: cfg.Inventory.Key, SKUs: cfg.SKUs(), Stock: cfg.Inventory.Stock,
		Mode: cfg.Lock.Mode, Wait: cfg.Lock.Wait,
		LabEnabled: cfg.Lab.Enabled, MaxWork: cfg.Lab.MaxWork, MaxFreeze: cfg.Lab.MaxFreeze,
		MaxPause: cfg.Lab.MaxPause, MaxLease: cfg.Lab.MaxLease, MaxStock: config.MaxStock, TrackOverlap: cfg.Lab.Enabled,
		AllowedModes: cfg.Lock.AllowedModes, OperatorRequired: cfg.Server.AdminToken != "", MaxInFlight: cfg.Server.MaxInFlight,
		RFencedLayout: cfg.Lock.FencedLayout == "redisson",
		CheckoutLimit: cfg.Checkout.Limit, CheckoutWait: cfg.Checkout.Wait,
	}
}

// Close releases every client and in-process server.
func (a *App) Close() {
	if a.stopLab != nil {
		a.stopLab()
	}
	if a.Checkout != nil {
		_ = a.Checkout.Close()
	}
	if a.Locks != nil {
		_ = a.Locks.Close()
	}
	if a.Data != nil {
		_ = a.Data.Close()
	}
	for _, m := range a.Masters {
		_ = m.Close()
	}
	if a.embedded != nil {
		a.embedded.Close()
	}
}

// inMemoryNote is what the start-up line and /readyz say of a Redis this process runs in memory.
const inMemoryNote = "in-memory, not durable"

// inMemory is the note of addr: inMemoryNote when this process started an in-process Redis there.
func (a *App) inMemory(addr string) string {
	if a.embedded != nil && slices.Contains(a.embedded.Addrs, addr) {
		return inMemoryNote
	}
	return ""
}

// pinger pings one Redis; note, when set, is said beside its "ok" (service.Noter).
type pinger struct {
	c    redis.UniversalClient
	note string
}

func (p pinger) Note() string { return p.note }

func (p pinger) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return p.c.Ping(ctx).Err()
}

// Serve runs the HTTP service until ctx ends, then shuts down gracefully. It writes the address
// it listens on to stdout once it accepts connections.
func Serve(ctx context.Context, cfg config.Config, stdout io.Writer, log *slog.Logger, lab Lab) error {
	a, err := New(ctx, cfg, log, lab)
	if err != nil {
		return err
	}
	defer a.Close()
	addr := net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port))
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("app: listen on %s: %w", addr, err)
	}
	ln := connlimit.New(tcp, connCap(cfg, fdLimit(), log))
	var lastRefusal atomic.Int64
	ln.OnRefuse = func(total int64) {
		// One line a second at most: a flood of connections must not flood the log too.
		if now := time.Now().Unix(); lastRefusal.Swap(now) != now {
			log.Warn("connection refused: server.maxConns connections are open", "open", ln.Open(), "refusedSoFar", total)
		}
	}
	srv := &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: cfg.Server.ReadTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	bound := ln.Addr().String()
	reach := bound // what to try from this machine: a wildcard address is reached on loopback
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		reach = net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	mem := ""
	if a.embedded != nil && len(a.embedded.Addrs) > 0 {
		mem = fmt.Sprintf("; %s: in-process redis on %s, every sale lost when this process ends", inMemoryNote,
			strings.Join(a.embedded.Addrs, ","))
	}
	fmt.Fprintf(stdout, "seckill %s listening on %s (dashboard http://%s/, lock mode %s, lab %s, admin token %s, data redis %s, masters %s%s)\n",
		cfg.Server.Instance, bound, reach, cfg.Lock.Mode, onOff(cfg.Lab.Enabled), setOrNot(cfg.Server.AdminToken),
		DataName(cfg), strings.Join(cfg.Redis.Masters, ","), mem)
	if w := postureWarning(cfg, ln.Addr()); w != "" {
		log.Warn(w)
		fmt.Fprintf(stdout, "  WARNING: %s\n", w)
	}
	fmt.Fprintf(stdout, "  try: curl -X POST http://%s/inventory/sale   swagger: http://%s/swagger/index.html\n", reach, reach)
	select {
	case err := <-errc:
		return fmt.Errorf("app: serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("app: shutdown: %w", err)
	}
	return nil
}

// connCap is server.maxConns, lowered to what the descriptor limit leaves once the Redis pools
// and some slack have theirs: past the limit accept fails (EMFILE) and new clients wait instead of
// being refused.
func connCap(cfg config.Config, limit uint64, log *slog.Logger) int {
	want := cfg.Server.MaxConns
	if limit == 0 || limit > 1<<31 {
		return want
	}
	reserve := uint64(cfg.Redis.PoolSize*(2+len(cfg.Redis.Masters)) + 128)
	if limit <= reserve+1 {
		log.Warn("the file descriptor limit leaves almost nothing for client connections", "limit", limit, "reserved", reserve)
		return 1
	}
	if fit := int(limit - reserve); fit < want {
		log.Warn("server.maxConns lowered to fit the file descriptor limit (raise it with ulimit -n)",
			"maxConns", want, "lowered to", fit, "limit", limit, "reserved for redis", reserve)
		return fit
	}
	return want
}

// postureWarning names the lab's open posture when the service listens beyond this machine (a
// container's image listens on every interface): with the lab on and no admin token, anyone who
// reaches the port may inject faults, reset the stock and run the lab.
func postureWarning(cfg config.Config, bound net.Addr) string {
	tcp, ok := bound.(*net.TCPAddr)
	if !cfg.Lab.Enabled || cfg.Server.AdminToken != "" || (ok && tcp.IP.IsLoopback()) {
		return ""
	}
	return fmt.Sprintf("listening on %s with the lab on (lab.enabled=true) and no admin token: anyone who reaches "+
		"this port may sell under the broken modes, inject faults, reset the stock and run the lab; for anything but a "+
		"private lab set SECKILL_LAB_ENABLED=false and SECKILL_SERVER_ADMINTOKEN (docs/operations.md, running it somewhere public)",
		bound)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func setOrNot(s string) string {
	if s != "" {
		return "set"
	}
	return "not set"
}

// checkAllowed refuses an allow-list naming one of the lab's deliberately broken modes: they
// exist to show a bug, and the allow-list is what the public may sell under. lua is not one of
// them: its one anomaly needs a business time longer than the lease, which only the lab's workMs
// produces (see its row in docs/lab.md).
func checkAllowed(allowed []string) error {
	for _, name := range allowed {
		m, err := modes.LookupMode(name)
		if err != nil {
			return fmt.Errorf("app: lock.allowedModes: %w", err)
		}
		if !m.Safe && m.Name != "lua" {
			return fmt.Errorf("app: %w: lock.allowedModes lists %s, one of the lab's deliberately broken modes (%s); "+
				"it may be used only through the lab", config.ErrInvalid, m.Name, m.Summary)
		}
	}
	return nil
}
