// Package lab turns each row of docs/lab.md into a repeatable experiment with a verdict. A
// scenario drives several simulated service instances (each with its own lock registry and
// instance id over the shared Redis clients) and many concurrent in-process buyers, injects the
// faults its row needs, and then judges what Redis recorded and what the buyers saw:
// REPRODUCED when an unsafe mode showed its anomaly, HELD when a safe mode showed none, and
// UNEXPECTED otherwise; STARVED when the process stalled long enough during the row to explain
// whatever it showed (internal/stall), so that a slow machine neither fails nor passes a row.
// Nothing is faked: every figure is read back from Redis or from the
// answers of service.Sale.
//
// Each scenario works on its own SKU ("lab-<name>"), so the lab never touches the service's
// inventory. Timings are multiples of one short lease so the whole lab takes seconds.
package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/modes"
	"seckill/internal/stall"
	"seckill/lab/fault"
	"seckill/service"
	"seckill/store"
)

// Verdicts.
const (
	Reproduced = "REPRODUCED"
	Held       = "HELD"
	Unexpected = "UNEXPECTED"
	// Starved: the process stalled during the row for at least 2/3 of the row's lease
	// (stall.Explains), long enough to explain what the row showed, whatever it showed; the
	// reason names the stall and what the checks said. Neither a pass nor a failure: run the
	// row again on a quieter machine.
	Starved = "STARVED"
	// Skipped: the scenario needs something this machine lacks (redis-sentinel for row 12); it
	// is not a failure, and the reason says what to install.
	Skipped = "SKIPPED"
)

// ErrSkipped, wrapped in the error a Drive returns, makes the verdict SKIPPED.
var ErrSkipped = errors.New("lab: scenario skipped")

// ErrUnknownScenario is returned for a scenario name that does not exist.
var ErrUnknownScenario = errors.New("lab: unknown scenario")

// Scenario is one row of docs/lab.md as an experiment.
type Scenario struct {
	// Name is how the scenario is chosen (--scenario NAME, /lab/scenarios/{name}/run).
	Name string `json:"name"`
	// Row is the row of docs/lab.md.
	Row int `json:"row"`
	// Mode is the lock mode under test; for a Library row, the library's kind it drives.
	Mode string `json:"mode"`
	// Library says the row drives one of the library's kinds directly (Mode names it: readwrite,
	// semaphore, expirable), not a lock mode of the service: it sells nothing, and its figures are
	// its checks and notes.
	Library bool `json:"-"`
	// Step names the row's step of the story in docs/lab.md, where its public references are
	// linked (e.g. "step 2: SETNX without a TTL").
	Step string `json:"step"`
	// Expect says, in words, what the row expects to see.
	Expect string `json:"expect"`
	// Short is Expect in a few words, for the table.
	Short string `json:"short"`
	// Safe rows must show no anomaly (HELD); unsafe ones must show theirs (REPRODUCED).
	Safe bool `json:"safe"`
	// LeaseFactor is the scenario's lease in units of the Runner's lease (0 means 1). The rows
	// whose watchdog must keep a lock alive use 2: a renewal then survives a stall of the whole
	// process of up to 2/3 of that lease (a loaded CI machine running -race), which the
	// Runner's short lease alone would not.
	LeaseFactor int `json:"-"`
	// Drive runs the experiment: it sells through e, injects faults and records checks. It
	// returns an error only when the experiment itself could not run.
	Drive func(ctx context.Context, e *Env) error `json:"-"`
}

// Check is one condition of a verdict: what was wanted and what was seen.
type Check struct {
	What string `json:"what"`
	Want string `json:"want"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
}

// Phase is a sub-experiment of a scenario on its own SKU, e.g. with a master stopped.
type Phase struct {
	Name     string         `json:"name"`
	SKU      string         `json:"sku"`
	Sold     int64          `json:"sold"`
	Initial  int64          `json:"initialStock"`
	Lost     int64          `json:"lostUpdates"`
	Overlaps int64          `json:"overlaps"`
	Outcomes map[string]int `json:"outcomes"`
	LeftKeys int            `json:"lockKeysLeft"`
}

// Result is one row of the lab's table.
type Result struct {
	Name   string `json:"name"`
	Row    int    `json:"row"`
	Mode   string `json:"mode"`
	Step   string `json:"step"`
	Expect string `json:"expect"`
	Short  string `json:"short"`
	Safe   bool   `json:"safe"`
	SKU    string `json:"sku"`

	// Figures of the main experiment, read from Redis (store.Snapshot).
	Sold           int64 `json:"sold"`
	Initial        int64 `json:"initialStock"`
	Stock          int64 `json:"stock"`
	Lost           int64 `json:"lostUpdates"`
	Oversold       int64 `json:"oversold"`
	Overlaps       int64 `json:"overlaps"`
	ForeignUnlocks int64 `json:"foreignUnlocks"`
	StaleRejected  int64 `json:"staleWritesRejected"`
	// Deadlock: the lock key stayed with no live holder and no TTL (or far past its holder's
	// death) and later buyers could not get it; in a row that drives a library kind, its waiters
	// could never get in (an owner waiting for its own read hold, a semaphore with no permit left).
	Deadlock bool `json:"deadlock"`
	// Renewals sums the watchdog renewals the buyers' leases made.
	Renewals int64 `json:"renewals"`

	// What the buyers saw: answers by kind (sold, soldout, timeout, crashed, stale, lost,
	// unavailable, error) over the whole scenario, phases included.
	Buyers   int            `json:"buyers"`
	Outcomes map[string]int `json:"outcomes"`

	Phases  []Phase  `json:"phases,omitempty"`
	Checks  []Check  `json:"checks"`
	Notes   []string `json:"notes,omitempty"`
	Verdict string   `json:"verdict"`
	// History is the second verdict, from the buyers' side alone: the main experiment's sales as
	// the buyers recorded them (call, answer, remaining stock), checked for linearizability
	// against a stock counter: linearizable, NOT linearizable, unknown (timeout) or "n/a: why".
	History string `json:"history"`
	// HistoryFile is porcupine's visualisation of a history that is NOT linearizable, a file
	// on the machine that ran the scenario (`seckill lab`; the service answers HistoryURL).
	HistoryFile string `json:"historyFile,omitempty"`
	// HistoryKept says the data Redis keeps that visualisation with this run (when it is at most
	// 256 KiB compressed, MaxKeptHistory), so every instance of the service on that Redis serves
	// it, wherever the run was started (`seckill lab` included).
	HistoryKept bool `json:"historyKept,omitempty"`
	// HistoryURL is where the service serves that visualisation: for a run whose drawing is kept
	// in Redis, or that this instance ran and drew to a file.
	HistoryURL string `json:"historyUrl,omitempty"`
	// Timeline is every sale of the main SKU as its buyer saw it, for the dashboard's drawing.
	Timeline []Span `json:"timeline,omitempty"`
	// Reason explains an UNEXPECTED, STARVED or SKIPPED verdict: the failed checks, the stall or
	// the error.
	Reason string `json:"reason,omitempty"`
	// StallMs is the longest the process stalled during the row (internal/stall): how late a
	// goroutine that wakes every few milliseconds woke.
	StallMs    float64 `json:"stallMs"`
	LeaseMs    int64   `json:"leaseMs"`
	DurationMs float64 `json:"durationMs"`
	// FinishedAt is when the run ended (UTC).
	FinishedAt time.Time `json:"finishedAt"`
}

// Progress is told when a scenario starts and when it ends.
type Progress struct {
	Index, Total int
	Scenario     Scenario
	// Result is nil when the scenario starts.
	Result *Result
}

// Runner runs scenarios against Redis clients it is given; it never closes them.
type Runner struct {
	// Data is the data Redis: stock, orders and the single-instance lock keys.
	Data redis.UniversalClient
	// Masters are the independent masters of multilock and redlock.
	Masters []redis.UniversalClient
	// Lease is the lab's lease (default 300ms); every timing of a scenario is a multiple of it.
	Lease time.Duration
	// Instances is how many service instances are simulated (default 3).
	Instances int
	// NoOutages skips the phases that stop a master. Those phases only ever stop Redis servers
	// the lab starts for itself (internal/redisproc), never Data or Masters.
	NoOutages bool
	// Log receives the simulated instances' logs (default: discarded; the table says it all).
	Log *slog.Logger
	// Progress, if set, is told as scenarios start and finish.
	Progress func(Progress)
	// HistoryDir is where the visualisation of a history that is not linearizable is written
	// (default: the OS temp dir).
	HistoryDir string
	// NoHistoryFiles writes no visualisation at all, HistoryDir or not (the verdict is the
	// same): `seckill lab` without --history-dir, which must leave no file behind that nobody
	// asked for and nobody removes.
	NoHistoryFiles bool

	// injectStall is added to every row's measured stall: a test's deterministic starvation
	// (export_test.go).
	injectStall time.Duration
}

func (r *Runner) lease() time.Duration {
	if r.Lease <= 0 {
		return 300 * time.Millisecond
	}
	return r.Lease
}

func (r *Runner) instances() int {
	if r.Instances <= 0 {
		return 3
	}
	return r.Instances
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// RunAll runs the named scenarios (all when names is empty) one after the other, in row order.
func (r *Runner) RunAll(ctx context.Context, names []string) ([]Result, error) {
	list, err := Select(names)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(list))
	for i, sc := range list {
		if r.Progress != nil {
			r.Progress(Progress{Index: i + 1, Total: len(list), Scenario: sc})
		}
		res := r.Run(ctx, sc)
		if r.Progress != nil {
			r.Progress(Progress{Index: i + 1, Total: len(list), Scenario: sc, Result: &res})
		}
		out = append(out, res)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// Run runs one scenario and judges it. It always returns a result; a failure to run is an
// UNEXPECTED verdict with the reason. The result is kept in the data Redis as the scenario's
// last run (LastRuns).
func (r *Runner) Run(ctx context.Context, sc Scenario) Result {
	res, page := r.run(ctx, sc)
	res.FinishedAt = time.Now().UTC()
	return r.record(ctx, res, page)
}

// run runs sc and judges it; page is the drawing of its failing history to keep with it in
// Redis (compressed; nil when there is none to keep).
func (r *Runner) run(ctx context.Context, sc Scenario) (_ Result, page []byte) {
	start := time.Now()
	lease := r.lease() * time.Duration(max(sc.LeaseFactor, 1))
	res := Result{Name: sc.Name, Row: sc.Row, Mode: sc.Mode, Step: sc.Step, Expect: sc.Expect, Short: sc.Short, Safe: sc.Safe,
		SKU: "lab-" + sc.Name, LeaseMs: lease.Milliseconds(), Outcomes: map[string]int{}}
	if _, err := modes.LookupMode(sc.Mode); err != nil && !sc.Library {
		res.Verdict = Unexpected
		res.Reason = fmt.Sprintf("lock mode %s is not available in this build: %v", sc.Mode, err)
		return res, nil
	}
	meter := stall.Start()
	meter.Inject(r.injectStall)
	// The faults act through a hook on the clients (once per client, however often Run runs).
	fault.Install(append([]redis.UniversalClient{r.Data}, r.Masters...)...)
	// Bounded: the longest scenario takes about a dozen leases.
	ctx, cancel := context.WithTimeout(ctx, 60*lease+20*time.Second)
	defer cancel()
	e := &Env{Scenario: sc, SKU: res.SKU, Lease: lease, Data: r.Data, Masters: r.Masters,
		runner: r, res: &res, origin: start}
	defer e.close()
	err := sc.Drive(ctx, e)
	e.finish(ctx)
	switch {
	case errors.Is(err, ErrSkipped):
		res.History = "n/a: skipped"
	case err != nil:
		res.History = "n/a: the experiment did not run to its end"
	default:
		e.checkHistory()
	}
	res.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	stalled := meter.Stop()
	res.StallMs = float64(stalled.Microseconds()) / 1000
	switch {
	case errors.Is(err, ErrSkipped):
		res.Verdict, res.Reason = Skipped, err.Error()
	case err != nil:
		res.Verdict = Unexpected
		res.Reason = "the experiment could not run: " + err.Error()
	default:
		var failed []string
		for _, c := range res.Checks {
			if !c.OK {
				failed = append(failed, fmt.Sprintf("%s: want %s, got %s", c.What, c.Want, c.Got))
			}
		}
		switch {
		case len(res.Checks) == 0:
			res.Verdict, res.Reason = Unexpected, "the scenario recorded no checks"
		case len(failed) > 0:
			res.Verdict, res.Reason = Unexpected, strings.Join(failed, "; ")
		case sc.Safe:
			res.Verdict = Held
		default:
			res.Verdict = Reproduced
		}
	}
	if why := leaseRanOut(res, sc.Safe, e.Count("lost"), stalled, lease); why != "" && e.slow == "" {
		e.slow = why
	}
	starve(&res, stalled, lease, e.slow)
	return res, e.keptPage
}

// leaseRanOut explains an UNEXPECTED safe row by the machine, or answers "": a holder of it
// found its lease run out unrenewed (its outcome "lost": it did not write) while the process
// stalled for a third of the lease or more. The watchdog renews every third of the lease, and a
// stall that long, with Redis's answers slowed by the same load, can let a lease run out; the
// checks that then fail (the holder did not sell, the next one entered beside it) are the lock
// doing its job on a starved machine. On a quiet machine the stall is milliseconds, and a lease
// lost to a broken watchdog stays UNEXPECTED.
func leaseRanOut(res Result, safe bool, lost int, stalled, lease time.Duration) string {
	if !safe || res.Verdict != Unexpected || lost == 0 || stalled < lease/3 {
		return ""
	}
	return fmt.Sprintf("the machine stalled %s, over a third of the %s lease, and %d holder(s) found their lease run out unrenewed",
		stalled.Round(time.Millisecond), lease, lost)
}

// starve turns a verdict the stall could explain into STARVED: a row judged while the process
// stalled for 2/3 of its lease or more may have failed because of the stall (a renewal missed,
// a timing bent) or passed because of it (an overlap the stall made, not the lock). The reason
// keeps what the checks said. slow (Env.Slow) does the same for a step the row times that took
// longer than the row allows.
func starve(res *Result, stalled, lease time.Duration, slow string) {
	if res.Verdict == Skipped || res.Verdict == Starved {
		return
	}
	why := slow
	if stall.Explains(stalled, lease) {
		why = stall.Why(stalled, lease)
	}
	if why == "" {
		return
	}
	said := res.Verdict
	if res.Reason != "" {
		said += ": " + res.Reason
	}
	res.Verdict, res.Reason = Starved, why+"; the checks said "+said
}

// Outcome is what one buyer saw.
type Outcome struct {
	Instance string
	// Kind: sold, soldout, timeout, crashed, stale, lost, unavailable or error.
	Kind          string
	Err           error
	ForeignUnlock bool
	ReleaseError  string
	Renewals      int64
	Token         int64
	// Remaining is the stock left after a sold answer, as the buyer was told.
	Remaining  int64
	Start, End time.Time
	// Wait is how long the buyer waited for the lock (from the service's answer).
	Wait time.Duration
	// Section is when the sale was inside its read-check-write (zero: never, or atomic).
	Section service.Section
}

// kindOf classifies a sale's answer.
func kindOf(res service.SaleResult, err error) string {
	switch {
	case err == nil && res.Sold:
		return "sold"
	case err == nil:
		return "error"
	case errors.Is(err, service.ErrSoldOut):
		return "soldout"
	case errors.Is(err, service.ErrLockTimeout):
		return "timeout"
	case errors.Is(err, service.ErrCrashed):
		return "crashed"
	case errors.Is(err, service.ErrStaleWrite):
		return "stale"
	case errors.Is(err, service.ErrLockLost):
		return "lost"
	case errors.Is(err, service.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, service.ErrCheckoutFull):
		return "checkout-full"
	default:
		return "error"
	}
}

// Fleet is a set of simulated service instances selling one SKU over the same Redis servers.
type Fleet struct {
	SKU     string
	Data    redis.UniversalClient
	Masters []redis.UniversalClient
	svcs    []*service.Service
	regs    []*modes.Registry
}

// Service returns instance i (modulo the fleet's size).
func (f *Fleet) Service(i int) *service.Service { return f.svcs[i%len(f.svcs)] }

// Locker is lock mode name on instance i, for the scenarios that act on a lock directly.
func (f *Fleet) Locker(i int, name string) (modes.Locker, error) {
	l, _, err := f.regs[i%len(f.regs)].Locker(name)
	return l, err
}

// Size is the number of instances.
func (f *Fleet) Size() int { return len(f.svcs) }

func (f *Fleet) close() {
	for _, r := range f.regs {
		_ = r.Close() // background renewals and subscriptions only; nothing to report
	}
}

// Env is what a scenario's Drive works with: the main fleet, the lease, and the recorders.
type Env struct {
	Scenario Scenario
	SKU      string
	Lease    time.Duration
	Data     redis.UniversalClient
	Masters  []redis.UniversalClient
	// Fleet sells e.SKU; NewFleet builds it (Drive calls it with the wait it needs).
	Fleet *Fleet

	runner   *Runner
	res      *Result
	origin   time.Time // of the history's times
	mu       sync.Mutex
	outcomes []Outcome // of the main fleet
	phaseOut []Outcome // of the phases
	stocks   []int64   // every stock e.SKU was set to
	closers  []func()
	// lockKeys are every key the fleets' locks may use beside the lock keys, deleted at the end.
	lockKeys []string
	// keptPage is the drawing of the failing history, compressed, to keep with the run (keepPage).
	keptPage []byte
	// slow says how the machine was too slow for the row's timing (Slow), "" when it was not.
	slow string
}

// Slow records that a step the row times took longer than the row allows it (took > allowed):
// a restart or a sale the design expects within a business time, on a machine too slow for it.
// The row is then STARVED, whatever its checks say, like a row the process stalled in.
func (e *Env) Slow(what string, took, allowed time.Duration) {
	if took <= allowed || e.slow != "" {
		return
	}
	e.slow = fmt.Sprintf("the machine was too slow for the row: %s took %s, longer than the %s the row allows it",
		what, took.Round(time.Millisecond), allowed.Round(time.Millisecond))
}

// NewFleet builds the main fleet on e.SKU with the given lock wait, and resets its stock.
func (e *Env) NewFleet(ctx context.Context, wait time.Duration, stock int64) error {
	f, err := e.newFleet(ctx, e.SKU, e.Data, e.Masters, wait, stock)
	if err != nil {
		return err
	}
	e.Fleet = f
	return nil
}

func (e *Env) newFleet(ctx context.Context, sku string, data redis.UniversalClient, masters []redis.UniversalClient,
	wait time.Duration, stock int64) (*Fleet, error) {
	f, err := e.buildFleet(sku, data, masters, wait, stock)
	if err != nil {
		return nil, err
	}
	if _, err := f.svcs[0].Reset(ctx, sku, stock); err != nil {
		return nil, fmt.Errorf("lab: reset %s: %w", sku, err)
	}
	e.stockSet(sku, stock)
	return f, nil
}

// buildFleet builds a fleet on sku without touching its stock: a second view of the same SKU
// (other masters, as a network partition gives each side its own).
func (e *Env) buildFleet(sku string, data redis.UniversalClient, masters []redis.UniversalClient,
	wait time.Duration, stock int64) (*Fleet, error) {
	f := &Fleet{SKU: sku, Data: data, Masters: masters}
	e.closers = append(e.closers, f.close)
	st := store.New(data)
	for i := range e.runner.instances() {
		name := fmt.Sprintf("lab-%c", 'A'+i)
		reg, err := modes.NewRegistry(modes.Deps{Data: data, Masters: masters, InstanceID: uuid.NewString(),
			Options: []lock.Option{lock.WithLease(e.Lease), lock.WithLogger(e.runner.log().With("instance", name))}, Steps: fault.Steps()})
		if err != nil {
			return nil, fmt.Errorf("lab: lock registry for %s: %w", name, err)
		}
		f.regs = append(f.regs, reg)
		if i == 0 {
			for _, keys := range reg.Keys(func(mode string) string { return store.LockKey(sku, mode) }) {
				e.lockKeys = append(e.lockKeys, keys...)
			}
		}
		svc := service.New(st, reg, service.Settings{
			Instance: name, SKU: sku, Stock: stock, Mode: e.Scenario.Mode,
			Wait: wait, LabEnabled: true,
			MaxWork: 20 * e.Lease, MaxFreeze: 20 * e.Lease, MaxPause: 20 * e.Lease, MaxLease: 20 * e.Lease,
			MaxStock: 1_000_000, TrackOverlap: true,
		}, nil, e.runner.log().With("instance", name))
		svc.SetHook(FaultsFor(svc.Settings()))
		f.svcs = append(f.svcs, svc)
	}
	return f, nil
}

// Request is what a lab buyer asks for: an explicit lease, and the faults its sale meets (they
// travel on the sale's context, modes.WithFaults, to the lab's hook, Faults).
type Request struct {
	Work           time.Duration // business time inside the critical section
	Freeze         time.Duration // stop-the-world pause after the lease check, before the write
	PauseBeforeDel time.Duration // uuid: pause between the value check and the DEL
	Crash          string        // "", modes.CrashAfterLock or modes.CrashBeforeExpire
	// Lease, when above 0, is an explicit lease (service.SaleRequest.Lease).
	Lease time.Duration
}

// faults are the faults r asks for.
func (r Request) faults() modes.Faults {
	return modes.Faults{Work: r.Work, Freeze: r.Freeze, PauseBeforeDel: r.PauseBeforeDel, Crash: r.Crash}
}

// Buy is one buyer on instance i of fleet f (the main fleet when f is nil).
func (e *Env) Buy(ctx context.Context, f *Fleet, i int, r Request) Outcome {
	if f == nil {
		f = e.Fleet
	}
	// Every sale of the main SKU, whichever fleet it went through, is part of its history.
	main := f.SKU == e.SKU
	svc := f.Service(i)
	req := service.SaleRequest{SKU: f.SKU, Mode: e.Scenario.Mode, Lease: r.Lease}
	o := Outcome{Instance: svc.Settings().Instance, Start: time.Now()}
	res, err := svc.Sale(modes.WithFaults(ctx, r.faults()), req)
	o.End = time.Now()
	o.Kind, o.Err = kindOf(res, err), err
	o.ForeignUnlock, o.ReleaseError, o.Renewals, o.Token = res.ForeignUnlock, res.ReleaseError, res.Renewals, res.Token
	if o.Kind == "sold" && res.Remaining != nil {
		o.Remaining = *res.Remaining
	}
	o.Wait = time.Duration(res.WaitMs * float64(time.Millisecond))
	o.Section = res.Section
	e.mu.Lock()
	if main {
		e.outcomes = append(e.outcomes, o)
	} else {
		e.phaseOut = append(e.phaseOut, o)
	}
	e.mu.Unlock()
	return o
}

// stockSet records that sku's stock was set (the history of the main SKU starts there).
func (e *Env) stockSet(sku string, stock int64) {
	if sku != e.SKU {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stocks = append(e.stocks, stock)
}

// Crowd runs n buyers at once, buyer k on instance k, with the request req(k), and waits for
// all of them.
func (e *Env) Crowd(ctx context.Context, f *Fleet, n int, req func(k int) Request) []Outcome {
	out := make([]Outcome, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() { out[k] = e.Buy(ctx, f, k, req(k)) })
	}
	wg.Wait()
	return out
}

// Go runs fn in the background; the returned wait blocks until it is done.
func Go(fn func()) (wait func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	return func() { <-done }
}

// Check records one condition of the verdict.
func (e *Env) Check(what, want string, got any, ok bool) {
	e.res.Checks = append(e.res.Checks, Check{What: what, Want: want, Got: fmt.Sprint(got), OK: ok})
}

// Note records an observation that is not a condition.
func (e *Env) Note(format string, args ...any) {
	e.res.Notes = append(e.res.Notes, fmt.Sprintf(format, args...))
}

// SetDeadlock records whether the row's deadlock was observed.
func (e *Env) SetDeadlock(v bool) { e.res.Deadlock = v }

// LockKey is the lock key of the scenario's mode for sku.
func (e *Env) LockKey(sku string) string { return store.LockKey(sku, e.Scenario.Mode) }

// Snapshot reads the audit figures of sku from the data Redis.
func (e *Env) Snapshot(ctx context.Context, sku string) (store.Inventory, error) {
	return store.New(e.Data).Snapshot(ctx, sku)
}

// Count counts the main fleet's outcomes of a kind.
func (e *Env) Count(kind string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, o := range e.outcomes {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

// Outcomes returns a copy of the main fleet's outcomes.
func (e *Env) Outcomes() []Outcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Outcome(nil), e.outcomes...)
}

// AddPhase records a phase's figures: its snapshot and the outcomes of buyers since mark.
func (e *Env) AddPhase(ctx context.Context, name string, f *Fleet, mark int, leftKeys int) (Phase, error) {
	inv, err := e.Snapshot(ctx, f.SKU)
	if err != nil {
		return Phase{}, err
	}
	p := Phase{Name: name, SKU: f.SKU, Sold: inv.Sold, Initial: inv.InitialStock, Lost: inv.LostUpdates,
		Overlaps: inv.Overlaps, Outcomes: map[string]int{}, LeftKeys: leftKeys}
	e.mu.Lock()
	for _, o := range e.phaseOut[mark:] {
		p.Outcomes[o.Kind]++
	}
	e.mu.Unlock()
	e.res.Phases = append(e.res.Phases, p)
	return p, nil
}

// PhaseMark is where the next phase's outcomes start.
func (e *Env) PhaseMark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.phaseOut)
}

// Span is one sale on a scenario's timeline, in ms since the scenario began.
type Span struct {
	Instance string  `json:"instance"`
	StartMs  float64 `json:"startMs"`
	EndMs    float64 `json:"endMs"`
	// HeldMs is when the buyer got the lock (-1: it never did, or the mode takes none), so
	// HeldMs..EndMs is its time holding the lock (or so it believes: a lease may run out).
	HeldMs float64 `json:"heldMs"`
	// SectionMs..SectionEndMs is its time inside the read-check-write (-1: never), within the
	// span the audit's overlaps are counted over; two buyers' sections that cross are an
	// overlap, the same thing the audit counts (Result.Overlaps).
	SectionMs    float64 `json:"sectionMs"`
	SectionEndMs float64 `json:"sectionEndMs"`
	// Kind is the answer: sold, soldout, timeout, crashed, stale, lost, unavailable or error.
	Kind string `json:"kind"`
}

// timeline turns the main SKU's sales into spans.
func (e *Env) timeline(outs []Outcome) []Span {
	since := func(t time.Time) float64 { return float64(t.Sub(e.origin).Microseconds()) / 1000 }
	spans := make([]Span, 0, len(outs))
	for _, o := range outs {
		s := Span{Instance: o.Instance, StartMs: since(o.Start), EndMs: since(o.End), HeldMs: -1, Kind: o.Kind,
			SectionMs: -1, SectionEndMs: -1}
		if !o.Section.Enter.IsZero() && !o.Section.Leave.IsZero() {
			s.SectionMs, s.SectionEndMs = since(o.Section.Enter), since(o.Section.Leave)
		}
		switch o.Kind {
		case "sold", "stale", "lost", "crashed":
			if e.Scenario.Mode != "atomic" {
				s.HeldMs = since(o.Start.Add(o.Wait))
			}
		}
		spans = append(spans, s)
	}
	return spans
}

// finish fills the result's figures from Redis and from the buyers.
func (e *Env) finish(ctx context.Context) {
	e.mu.Lock()
	e.res.Timeline = e.timeline(e.outcomes)
	all := append(append([]Outcome(nil), e.outcomes...), e.phaseOut...)
	for _, o := range e.outcomes {
		e.res.Renewals += o.Renewals
	}
	e.mu.Unlock()
	e.res.Buyers = len(all)
	for _, o := range all {
		e.res.Outcomes[o.Kind]++
	}
	if e.Fleet == nil {
		return
	}
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		e.Check("read the figures back from Redis", "no error", err, false)
		return
	}
	e.res.Sold, e.res.Initial, e.res.Stock = inv.Sold, inv.InitialStock, inv.Stock
	e.res.Lost, e.res.Oversold, e.res.Overlaps = inv.LostUpdates, inv.Oversold, inv.Overlaps
	e.res.ForeignUnlocks, e.res.StaleRejected = inv.ForeignUnlocks, inv.StaleRejected
}

// close stops the fleets' background work, deletes the lab's lock keys (a deadlocked key with
// no TTL must not stay behind) and runs the other closers, last first.
func (e *Env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	prefix := store.KeysFor(e.SKU).LockPrefix
	for _, c := range append([]redis.UniversalClient{e.Data}, e.Masters...) {
		if _, err := deleteKeys(ctx, c, prefix); err != nil {
			e.runner.log().Warn("lab: delete lock keys", "prefix", prefix, "err", err)
		}
		// and the keys the locks keep beside their lock keys (Registry.Keys), one at a time: on
		// a cluster they are in the slots of several SKUs
		for _, k := range e.lockKeys {
			if err := c.Del(ctx, k).Err(); err != nil {
				e.runner.log().Warn("lab: delete lock keys", "key", k, "err", err)
			}
		}
	}
}

// deleteKeys deletes every key starting with prefix and says how many there were.
func deleteKeys(ctx context.Context, c redis.UniversalClient, prefix string) (int, error) {
	keys, err := scanKeys(ctx, c, prefix)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	return len(keys), c.Del(ctx, keys...).Err()
}

// scanKeys lists the keys starting with prefix.
func scanKeys(ctx context.Context, c redis.UniversalClient, prefix string) ([]string, error) {
	var keys []string
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("lab: scan %s*: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}

// waitFor polls cond every step until it is true, limit has passed (false) or ctx ends.
func waitFor(ctx context.Context, limit, step time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil || ok {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		t := time.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

// WaitHeld waits until the lock key exists on c (someone holds the lock).
func (e *Env) WaitHeld(ctx context.Context, c redis.UniversalClient, key string) error {
	ok, err := waitFor(ctx, 5*e.Lease, 2*time.Millisecond, func() (bool, error) {
		n, err := c.Exists(ctx, key).Result()
		return n == 1, err
	})
	if err != nil {
		return fmt.Errorf("lab: wait for %s to be held: %w", key, err)
	}
	if !ok {
		return fmt.Errorf("lab: %s was not taken within %s", key, 5*e.Lease)
	}
	return nil
}

// WaitInside waits until a buyer of sku is inside its critical section: it holds the lock, and
// whatever the lock does after winning (a fencing token's rounds) is over.
func (e *Env) WaitInside(ctx context.Context, sku string) error {
	inside := store.KeysFor(sku).InSection
	ok, err := waitFor(ctx, 5*e.Lease, 2*time.Millisecond, func() (bool, error) {
		n, err := e.Data.ZCard(ctx, inside).Result()
		return n > 0, err
	})
	if err != nil {
		return fmt.Errorf("lab: wait for a buyer of %s inside: %w", sku, err)
	}
	if !ok {
		return fmt.Errorf("lab: no buyer of %s got inside within %s", sku, 5*e.Lease)
	}
	return nil
}

// TimelineOverlaps counts the sales on a timeline that entered their read-check-write while
// another sale was inside its own: what the audit's overlaps count in Redis, seen from the
// buyers' side (the dashboard counts its red bars the same way). Each section is the part of
// the time Redis counted the sale inside, so this is at most Result.Overlaps.
func TimelineOverlaps(spans []Span) int {
	n := 0
	for i, s := range spans {
		if s.SectionMs < 0 {
			continue
		}
		for j, o := range spans {
			if j != i && o.SectionMs >= 0 && s.SectionMs < o.SectionEndMs &&
				(o.SectionMs < s.SectionMs || o.SectionMs == s.SectionMs && j < i) {
				n++
				break
			}
		}
	}
	return n
}
