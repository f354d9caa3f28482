package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Fault kinds: the nemesis' catalogue, the same for every mode.
const (
	// Crash: a holder dies at a random point (after its first or second Redis reply, after
	// acquiring, before its write, after its write): nothing it would send afterwards reaches
	// Redis, so nothing is renewed or released.
	Crash = "crash"
	// Pause: a holder stops the world (a long GC) at a random point, its watchdog included.
	Pause = "pause"
	// SlowReply: every reply a holder gets reaches it late (a pause between sending its
	// commands and acting on their replies).
	SlowReply = "slow-reply"
	// MasterDown: a lock master is stopped (SIGSTOP) and continued later, its data kept.
	MasterDown = "master-down"
	// MasterRestartEmpty: a lock master is killed and started again without its data.
	MasterRestartEmpty = "master-restart-empty"
	// ClockFast: a lock master's clock runs fast for a while: its keys expire early.
	ClockFast = "clock-fast"
	// Failover: the first lock master (a Sentinel-managed master and replica) fails over to a
	// replica that lags: replication is held back, the master killed, the replica promoted.
	Failover = "failover"
	// Partition: one service instance loses its connections to some of the lock masters.
	Partition = "partition"
)

// Catalogue lists every fault kind, in the order --faults documents them.
var Catalogue = []string{Crash, Pause, SlowReply, MasterDown, MasterRestartEmpty, ClockFast, Failover, Partition}

// DataLosing are the faults that lose Redis's own data: with them on, even a correct lock can
// be fooled (a lock key that vanishes with its server), so a safe mode's claim excludes them.
var DataLosing = []string{MasterRestartEmpty, Failover}

// Where a holder fault strikes.
const (
	AtReply1       = "reply-1" // the holder dies right after its first Redis reply (inside the acquisition)
	AtReply2       = "reply-2" // ... after its second
	AtAfterAcquire = "after-acquire"
	AtBeforeCommit = "before-commit" // after the lease check, before the write
	AtAfterCommit  = "after-commit"  // after the write, before the release
)

var (
	crashPoints = []string{AtReply1, AtReply2, AtAfterAcquire, AtBeforeCommit, AtAfterCommit}
	pausePoints = []string{AtAfterAcquire, AtBeforeCommit, AtAfterCommit}
)

// Masters is how many lock masters the explorer runs: the single-instance modes keep their
// lock on master 0, multilock and redlock use all three.
const Masters = 3

// Schedule is one trial: the workload and the faults, everything a replay needs.
type Schedule struct {
	Seed  uint64 `json:"seed"`
	Trial int    `json:"trial"`
	// LeaseMs is the lock lease; every other time is drawn as a multiple of it.
	LeaseMs int64 `json:"leaseMs"`
	// WaitMs bounds each buyer's wait for the lock.
	WaitMs    int64   `json:"waitMs"`
	Stock     int64   `json:"stock"`
	Instances int     `json:"instances"`
	Buyers    []Buyer `json:"buyers"`
	Faults    []Fault `json:"faults"`
}

// Buyer is one sale: on which instance, when it starts, how long it works inside the lock.
type Buyer struct {
	Instance int   `json:"instance"`
	StartMs  int64 `json:"startMs"`
	WorkMs   int64 `json:"workMs"`
	// ExplicitLease turns the watchdog off for this acquisition (Redisson's lock(lease)).
	ExplicitLease bool `json:"explicitLease,omitempty"`
}

// Fault is one fault of the nemesis. Holder faults (crash, pause, slow-reply) name a Buyer;
// server faults name a Master and a time; a partition names an Instance and its Masters.
type Fault struct {
	Kind     string  `json:"kind"`
	Buyer    int     `json:"buyer"`
	Point    string  `json:"point,omitempty"`
	Master   int     `json:"master"`
	Masters  []int   `json:"masters,omitempty"`
	Instance int     `json:"instance"`
	AtMs     int64   `json:"atMs"`
	DurMs    int64   `json:"durMs"`
	Rate     float64 `json:"rate,omitempty"`
}

// holder reports whether the fault strikes one buyer.
func (f Fault) holder() bool { return f.Kind == Crash || f.Kind == Pause || f.Kind == SlowReply }

// String is the fault in a few words, as the report shows it.
func (f Fault) String() string {
	switch f.Kind {
	case Crash:
		return fmt.Sprintf("crash b%d %s", f.Buyer, f.Point)
	case Pause:
		return fmt.Sprintf("pause b%d %s %dms", f.Buyer, f.Point, f.DurMs)
	case SlowReply:
		return fmt.Sprintf("slow-reply b%d +%dms/reply", f.Buyer, f.DurMs)
	case MasterDown:
		return fmt.Sprintf("master-down m%d @%dms for %dms", f.Master, f.AtMs, f.DurMs)
	case MasterRestartEmpty:
		return fmt.Sprintf("master-restart-empty m%d @%dms", f.Master, f.AtMs)
	case ClockFast:
		return fmt.Sprintf("clock-fast m%d x%.1f @%dms for %dms", f.Master, f.Rate, f.AtMs, f.DurMs)
	case Failover:
		return fmt.Sprintf("failover m0 @%dms, replica lagging %dms", f.AtMs, f.DurMs)
	case Partition:
		ms := make([]string, len(f.Masters))
		for i, m := range f.Masters {
			ms[i] = fmt.Sprintf("m%d", m)
		}
		return fmt.Sprintf("partition i%d from %s @%dms for %dms", f.Instance, strings.Join(ms, ","), f.AtMs, f.DurMs)
	}
	return f.Kind
}

// FaultStrings lists the faults in a few words each.
func (s Schedule) FaultStrings() []string {
	out := make([]string, 0, len(s.Faults))
	for _, f := range s.Faults {
		out = append(out, f.String())
	}
	return out
}

func (s Schedule) lease() time.Duration { return time.Duration(s.LeaseMs) * time.Millisecond }
func (s Schedule) wait() time.Duration  { return time.Duration(s.WaitMs) * time.Millisecond }

// Draw draws trial number trial of seed: the workload (2 to 6 buyers over 1 to 3 instances,
// section times up to twice the lease, the watchdog or an explicit lease) and up to three
// faults from kinds. It never sees the mode, so every mode meets the same schedules: the same
// seed, trial, kinds and lease draw the same schedule.
func Draw(seed uint64, trial int, kinds []string, lease time.Duration) Schedule {
	rng := rand.New(rand.NewPCG(seed, uint64(trial)))
	L := max(lease.Milliseconds(), 1)
	upTo := func(n int64) int64 { return rng.Int64N(max(n, 1) + 1) }
	between := func(lo, hi int64) int64 { return lo + upTo(hi-lo) }
	n := 2 + rng.IntN(5)
	s := Schedule{Seed: seed, Trial: trial, LeaseMs: L, WaitMs: 4 * L, Instances: 1 + rng.IntN(3),
		Stock: 1 + rng.Int64N(int64(n-1)), Faults: []Fault{}}
	for range n {
		b := Buyer{Instance: rng.IntN(s.Instances), StartMs: upTo(L)}
		// Most sections are short; one in four runs past the lease, up to twice it.
		if rng.IntN(4) == 0 {
			b.WorkMs = between(L, 2*L)
		} else {
			b.WorkMs = upTo(L / 5)
		}
		b.ExplicitLease = rng.IntN(4) == 0
		s.Buyers = append(s.Buyers, b)
	}
	if len(kinds) == 0 {
		return s
	}
	for range rng.IntN(4) {
		f := Fault{Kind: kinds[rng.IntN(len(kinds))]}
		switch f.Kind {
		case Crash:
			f.Buyer, f.Point = rng.IntN(n), crashPoints[rng.IntN(len(crashPoints))]
		case Pause:
			f.Buyer, f.Point, f.DurMs = rng.IntN(n), pausePoints[rng.IntN(len(pausePoints))], between(L/4, 3*L)
		case SlowReply:
			f.Buyer, f.DurMs = rng.IntN(n), between(L/20, L/2)
		case MasterDown:
			f.Master, f.AtMs, f.DurMs = rng.IntN(Masters), upTo(2*L), between(L/2, 3*L)
		case MasterRestartEmpty:
			f.Master, f.AtMs = rng.IntN(Masters), upTo(2*L)
		case ClockFast:
			f.Master, f.AtMs, f.DurMs = rng.IntN(Masters), upTo(2*L), between(L/2, 3*L)
			f.Rate = float64(20+rng.IntN(31)) / 10 // 2.0 to 5.0
		case Failover:
			f.AtMs, f.DurMs = upTo(2*L), between(L/4, 2*L)
		case Partition:
			f.Instance, f.AtMs, f.DurMs = rng.IntN(s.Instances), upTo(2*L), between(L/2, 3*L)
			mask := 1 + rng.IntN(1<<Masters-1)
			for m := range Masters {
				if mask&(1<<m) != 0 {
					f.Masters = append(f.Masters, m)
				}
			}
		}
		// One failover per trial: the topology is rebuilt after it.
		if f.Kind == Failover && slices.ContainsFunc(s.Faults, func(g Fault) bool { return g.Kind == Failover }) {
			continue
		}
		s.Faults = append(s.Faults, f)
	}
	return s
}

// ParseFaults checks a --faults list (comma-separated; empty or "all" is the whole catalogue).
func ParseFaults(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return slices.Clone(Catalogue), nil
	}
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "none" {
			continue
		}
		if !slices.Contains(Catalogue, f) {
			return nil, fmt.Errorf("%w %q; the catalogue: %s (or all, or none)", ErrUnknownFault, f, strings.Join(Catalogue, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// withoutBuyer is s without buyer j and the faults that strike it.
func (s Schedule) withoutBuyer(j int) Schedule {
	out := s
	out.Buyers = slices.Delete(slices.Clone(s.Buyers), j, j+1)
	out.Faults = []Fault{}
	for _, f := range s.Faults {
		if f.holder() {
			if f.Buyer == j {
				continue
			}
			if f.Buyer > j {
				f.Buyer--
			}
		}
		out.Faults = append(out.Faults, f)
	}
	out.Stock = max(1, min(s.Stock, int64(len(out.Buyers))))
	return out
}

// withoutFault is s without fault i.
func (s Schedule) withoutFault(i int) Schedule {
	out := s
	out.Faults = slices.Delete(slices.Clone(s.Faults), i, i+1)
	return out
}

// size orders schedules for the shrinker and the report: faults, then buyers.
// explicitLeases counts the buyers with an explicit lease.
func (s Schedule) explicitLeases() int {
	n := 0
	for _, b := range s.Buyers {
		if b.ExplicitLease {
			n++
		}
	}
	return n
}

func (s Schedule) size() int { return 10*len(s.Faults) + len(s.Buyers) }
