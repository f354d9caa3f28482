package modes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/rows"
)

// Fault names, as accepted on /inventory/sale. A Mode lists the ones it can simulate; the lab
// (seckill/lab/fault) injects them, from outside this package.
const (
	FaultWork              = "workMs"
	FaultCrashAfterLock    = "crash=after-lock"
	FaultCrashBeforeExpire = "crash=before-expire"
	FaultPauseBeforeDel    = "pauseBeforeDelMs"
	FaultHolderPause       = "freezeMs" // a stop-the-world pause of the holder (a long GC)
	FaultExplicitLease     = "leaseMs"  // an explicit lease: the watchdog is off
)

// lockedFaults are the faults every mode that really takes a lock can simulate.
var lockedFaults = []string{FaultWork, FaultCrashAfterLock, FaultHolderPause}

// watchdogFaults are those of the modes with a watchdog, which an explicit lease turns off.
var watchdogFaults = append(slices.Clone(lockedFaults), FaultExplicitLease)

// Mode describes one lock mode: the row of docs/lab.md it reproduces and how to build it.
type Mode struct {
	Name string
	// Row is the mode's row in docs/lab.md; modes are listed in this order.
	Row int
	// Step names the mode's step of the story in docs/lab.md and the public page it comes from,
	// by link.
	Step string
	// Source is Step short enough for a table column (the lab's SOURCE).
	Source string
	// Safe modes must never show an anomaly; unsafe ones must reliably show theirs.
	Safe bool
	// Summary is one line for listings: what the mode does and what goes wrong or why it holds.
	Summary string
	// Atomic modes take no lock: the service sells with one Lua decrement instead.
	Atomic bool
	// Faults lists the injectable faults that apply to this mode.
	Faults []string
	// New builds the mode's Locker; nil for Atomic modes.
	New func(Deps) (Locker, error)
}

// Supports reports whether fault applies to the mode.
func (m Mode) Supports(fault string) bool { return slices.Contains(m.Faults, fault) }

// Deps are what lock modes are built from.
type Deps struct {
	// Data is the data Redis: single-instance modes keep their lock key there.
	Data redis.UniversalClient
	// Masters are the independent masters used by multilock and redlock.
	Masters []redis.UniversalClient
	// InstanceID identifies this process, like the UUID of a Redisson client: the library's
	// locks write it (lock.WithInstanceID) and Inspect marks the holders and waiters it finds
	// with it. "": a random id for each lock, and none marked.
	InstanceID string
	// Options are the library's options, given to every library lock mode (app.LockOptions
	// makes the service's from lock.*): those only some kinds honour given as
	// lock.Option.Optional, so each constructor takes what applies to its kind and the library's
	// defaults hold for the rest. The broken modes take their lease from them too (Deps.lease).
	Options []lock.Option
	// Steps are the knobs of the deliberately broken modes (zero: none).
	Steps StepHooks
}

// options are d's library options, with its instance id and extra.
func (d Deps) options(extra ...lock.Option) []lock.Option {
	opts := slices.Clone(d.Options)
	if d.InstanceID != "" {
		opts = append(opts, lock.WithInstanceID(d.InstanceID))
	}
	return append(opts, extra...)
}

// lease is the default lease d's options give the library's locks (WithLease's, or the
// library's default), asked of the library, which alone reads its options: the broken modes
// expire their keys after it, and the multilock demo reports it.
func (d Deps) lease() time.Duration {
	l, err := lock.NewLua(d.Data, d.options()...)
	if err != nil {
		return (*lock.Locker)(nil).DefaultLease()
	}
	defer func() { _ = l.Close() }()
	return l.DefaultLease()
}

// StepHooks are the deliberately broken modes' own knobs. Each runs between the two commands that
// its mode (wrongly) sends apart, so a test or the lab can crash or pause the holder exactly in
// the window that is the bug. The safe modes have no such window and no knob.
type StepHooks struct {
	// BeforeExpire runs in setnx-expire between SETNX and EXPIRE. An error is the holder dying
	// there: the EXPIRE is never sent (the key keeps no TTL) and Acquire returns the error.
	BeforeExpire func(ctx context.Context, key string) error
	// BeforeDel runs in uuid between its value check and its DEL (a pause there widens the
	// window in which the DEL removes another holder's lock). An error ends the release there.
	BeforeDel func(ctx context.Context, key string) error
}

// modes are the registered modes; each mode's file adds itself from init.
var modes = rows.New("lock mode", func(m Mode) (int, string) { return m.Row, m.Name })

// register adds a mode; each mode's file calls it from init.
func register(m Mode) { modes.Add(m) }

// Modes lists every mode in row order.
func Modes() []Mode { return modes.All() }

// Names lists every mode name in row order.
func Names() []string { return modes.Names() }

// ErrUnknownMode is returned for a mode name that is not registered.
var ErrUnknownMode = errors.New("lock: unknown mode")

// LookupMode returns the mode called name.
func LookupMode(name string) (Mode, error) {
	m, ok := modes.Get(name)
	if !ok {
		return Mode{}, fmt.Errorf("%w %q; valid modes: %s", ErrUnknownMode, name, strings.Join(Names(), ", "))
	}
	return m, nil
}

// Registry holds one built Locker per mode, shared by all requests.
type Registry struct {
	deps    Deps
	lease   time.Duration
	lockers map[string]Locker
}

// NewRegistry builds every registered mode from deps.
func NewRegistry(deps Deps) (*Registry, error) {
	r := &Registry{deps: deps, lease: deps.lease(), lockers: map[string]Locker{}}
	for _, m := range Modes() {
		if m.New == nil {
			continue
		}
		l, err := m.New(deps)
		if err != nil {
			return nil, fmt.Errorf("lock: build mode %s: %w", m.Name, err)
		}
		r.lockers[m.Name] = l
	}
	return r, nil
}

// Resolved is a lock mode looked up once: its description and the Locker it sells with (nil for
// an Atomic mode).
type Resolved struct {
	Mode
	Locker Locker
}

// Resolve looks mode name up, once: what a sale needs of its mode.
func (r *Registry) Resolve(name string) (Resolved, error) {
	m, err := LookupMode(name)
	if err != nil || r == nil {
		return Resolved{Mode: m}, err
	}
	return Resolved{Mode: m, Locker: r.lockers[name]}, nil
}

// Locker returns the Locker of mode name (nil for an Atomic mode) and the mode.
func (r *Registry) Locker(name string) (Locker, Mode, error) {
	m, err := r.Resolve(name)
	return m.Locker, m.Mode, err
}

// Close stops whatever background work the lockers run (subscriptions, watchdogs).
func (r *Registry) Close() error {
	var errs []error
	for _, l := range r.lockers {
		if c, ok := l.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Keys lists, for every mode with a Locker, every Redis key its lock may use when named
// lockKey(mode), that lock key first: the library's own keys (Locker.Keys) beside the lock.
func (r *Registry) Keys(lockKey func(mode string) string) [][]string {
	var out [][]string
	for _, m := range Modes() {
		if l := r.lockers[m.Name]; l != nil {
			out = append(out, l.Keys(lockKey(m.Name)))
		}
	}
	return out
}

// ClearMasters deletes, on every master, every key starting with prefix and every key of keys
// (reset uses it to drop the multilock and redlock keys of a SKU).
func (r *Registry) ClearMasters(ctx context.Context, prefix string, keys []string) error {
	var errs []error
	for _, m := range r.deps.Masters {
		iter := m.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := m.Del(ctx, iter.Val()).Err(); err != nil {
				errs = append(errs, redisErr("DEL "+iter.Val(), err))
			}
		}
		if err := iter.Err(); err != nil {
			errs = append(errs, redisErr("SCAN", err))
		}
		if len(keys) > 0 {
			if err := m.Del(ctx, keys...).Err(); err != nil {
				errs = append(errs, redisErr("DEL", err))
			}
		}
	}
	return errors.Join(errs...)
}

// InstanceID is the id this process writes into Redisson-layout hash fields.
func (r *Registry) InstanceID() string { return r.deps.InstanceID }

// Lease is the default lease of the modes (lock.lease, or the library's default).
func (r *Registry) Lease() time.Duration { return r.lease }
