package explore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/internal/stall"
	"seckill/lab/fault"
	"seckill/store"

	"github.com/seckill-lab/seckill/lock/lockutil"

	"github.com/seckill-lab/seckill/lock"
)

// sku is the explorer's own stock key on the resource Redis.
const sku = "explore"

// Record is what one buyer recorded of its sale, on its own clock (the checker trusts nothing
// else but the final stock it reads itself).
type Record struct {
	Buyer    int `json:"buyer"`
	Instance int `json:"instance"`
	// Kind: sold, soldout, timeout, crashed, stale, lost, unavailable or error.
	Kind      string `json:"kind"`
	Err       string `json:"err,omitempty"`
	Remaining int64  `json:"remaining,omitempty"`
	Token     int64  `json:"token,omitempty"`
	// Times since the trial began, ms; 0 when the step never happened.
	StartMs    float64 `json:"startMs"`
	AcquiredMs float64 `json:"acquiredMs,omitempty"`
	// ReadMs is when its read of the stock came back: with a fencing token, by then the store
	// knows the token.
	ReadMs        float64 `json:"readMs,omitempty"`
	CommitStartMs float64 `json:"commitStartMs,omitempty"`
	CommitEndMs   float64 `json:"commitEndMs,omitempty"`
	EndMs         float64 `json:"endMs"`
	// CrashMs is when the buyer died (crashed only).
	CrashMs float64 `json:"crashMs,omitempty"`
	// Wrote: the buyer's write was accepted (told sold, or died after its write).
	Wrote         bool `json:"wrote,omitempty"`
	ForeignUnlock bool `json:"foreignUnlock,omitempty"`
	// SlowReplies: the buyer's own replies were slowed (its waits say nothing of the lock).
	SlowReplies bool `json:"slowReplies,omitempty"`

	start, end time.Time
}

// Event is one server fault as the nemesis applied it: the time Redis was not itself.
type Event struct {
	Kind    string  `json:"kind"`
	Master  int     `json:"master"`
	StartMs float64 `json:"startMs"`
	EndMs   float64 `json:"endMs"`
	Err     string  `json:"err,omitempty"`
}

// Outcome is one trial: its records, the nemesis' events, and the checker's verdict.
type Outcome struct {
	Mode     string   `json:"mode"`
	Schedule Schedule `json:"schedule"`
	Records  []Record `json:"records"`
	Events   []Event  `json:"events,omitempty"`
	// Final is the stock read back from the resource after the trial.
	Final      int64       `json:"finalStock"`
	Violations []Violation `json:"violations,omitempty"`
	DurationMs float64     `json:"durationMs"`
	// StallMs is the longest the process stalled during the trial (internal/stall).
	StallMs float64 `json:"stallMs"`
}

// Starved reports whether the trial's stall could explain what it showed: at least 2/3 of the
// lease (stall.Explains). A violation of a starved trial says more about the machine than about
// the lock, so it is set aside rather than counted.
func (o Outcome) Starved() bool {
	return stall.Explains(time.Duration(o.StallMs*float64(time.Millisecond)), o.Schedule.lease())
}

// Stall is the trial's longest stall.
func (o Outcome) Stall() time.Duration { return time.Duration(o.StallMs * float64(time.Millisecond)) }

// trial is one run of a schedule.
type trial struct {
	rig    *Rig
	mode   modes.Mode
	s      Schedule
	st     *store.Store
	origin time.Time
	lock   []modes.Locker // per instance; nil for the atomic mode
	mu     sync.Mutex
	events []Event
}

func (t *trial) since(at time.Time) float64 {
	return math.Round(float64(at.Sub(t.origin).Microseconds())) / 1000
}

// Run runs schedule s once for mode on the rig and checks it.
func (r *Rig) Run(ctx context.Context, mode modes.Mode, s Schedule) (Outcome, error) {
	for _, f := range s.Faults {
		if !slices.Contains(r.Drawable, f.Kind) {
			return Outcome{}, fmt.Errorf("%w: %s (backend %s)", ErrCannotDraw, f.Kind, r.Backend)
		}
	}
	if s.Instances < 1 || s.Instances > maxInstances || len(s.Buyers) == 0 {
		return Outcome{}, fmt.Errorf("explore: schedule with %d instances and %d buyers: want 1..%d and at least 1",
			s.Instances, len(s.Buyers), maxInstances)
	}
	if err := r.reset(ctx); err != nil {
		return Outcome{}, err
	}
	t := &trial{rig: r, mode: mode, s: s, st: store.New(r.res)}
	if err := t.st.Reset(ctx, sku, s.Stock); err != nil {
		return Outcome{}, fmt.Errorf("explore: put the stock in: %w", err)
	}
	if !mode.Atomic {
		for i := range s.Instances {
			in := r.inst[i]
			l, err := mode.New(modes.Deps{Data: in.clients[0], Masters: in.clients[:], InstanceID: uuid.NewString(),
				Options: []lock.Option{lock.WithLease(s.lease())}, Steps: fault.Steps()})
			if err != nil {
				t.closeLocks()
				return Outcome{}, fmt.Errorf("explore: build mode %s: %w", mode.Name, err)
			}
			t.lock = append(t.lock, l)
		}
	}
	defer t.closeLocks()
	// Every sale and fault is bounded; this only guards against a hang.
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	t.origin = time.Now()
	meter := stall.Start()
	meter.Inject(r.injectStall)
	recs := make([]Record, len(s.Buyers))
	var wg sync.WaitGroup
	for i := range s.Buyers {
		wg.Go(func() { recs[i] = t.buy(tctx, i) })
	}
	// The nemesis stops when the last buyer is done: a fault after that could change nothing
	// the checker sees, and the next trial starts sooner.
	nctx, stop := context.WithCancel(tctx)
	defer stop()
	var nwg sync.WaitGroup
	for _, f := range s.Faults {
		if !f.holder() {
			nwg.Go(func() { t.nemesis(nctx, f) })
		}
	}
	wg.Wait()
	stop()
	nwg.Wait()
	stalled := meter.Stop()
	out := Outcome{Mode: mode.Name, Schedule: s, Records: recs, Events: t.events,
		StallMs: float64(stalled.Microseconds()) / 1000}
	final, err := t.st.Stock(ctx, sku)
	if err != nil {
		return out, fmt.Errorf("explore: read the stock back: %w", err)
	}
	out.Final = final
	out.DurationMs = t.since(time.Now())
	out.Violations = Check(out)
	return out, nil
}

func (t *trial) closeLocks() {
	for _, l := range t.lock {
		_ = l.Close() // background subscriptions only; nothing to report
	}
}

// buy is one buyer's sale, as service.Sale does it (acquire, read, work, check the lease, write,
// release), with the faults that strike this buyer, recording each step on its own clock.
func (t *trial) buy(ctx context.Context, i int) (rec Record) {
	b := t.s.Buyers[i]
	rec = Record{Buyer: i, Instance: b.Instance}
	var plan fault.Plan
	crashAt, pauseAt, replies := "", "", int32(0)
	var pause time.Duration
	for _, f := range t.s.Faults {
		if !f.holder() || f.Buyer != i {
			continue
		}
		switch f.Kind {
		case Crash:
			crashAt = f.Point
			switch f.Point {
			case AtReply1:
				replies = 1
			case AtReply2:
				replies = 2
			}
		case Pause:
			pauseAt, pause = f.Point, time.Duration(f.DurMs)*time.Millisecond
		case SlowReply:
			plan.PauseAfterReply = time.Duration(f.DurMs) * time.Millisecond
			rec.SlowReplies = true
		}
	}
	lockutil.Sleep(ctx, time.Duration(b.StartMs)*time.Millisecond)
	ctx, holder := fault.Attach(ctx, plan)
	rc := &replyCrash{holder: holder}
	if replies > 0 {
		rc.left.Store(replies)
		ctx = withReplyCrash(ctx, rc)
	}
	rec.start = time.Now()
	defer func() {
		rec.end = time.Now()
		rec.StartMs, rec.EndMs = t.since(rec.start), t.since(rec.end)
	}()
	died := func() bool {
		if !holder.Crashed() {
			return false
		}
		rec.Kind = "crashed"
		if at := rc.crashedAt(); !at.IsZero() {
			rec.CrashMs = t.since(at)
		} else {
			rec.CrashMs = t.since(time.Now())
		}
		return true
	}
	// at is a point of the sale: the buyer dies there, or pauses, as planned.
	at := func(point string) bool {
		if crashAt == point {
			holder.Crash()
			rec.Kind, rec.CrashMs = "crashed", t.since(time.Now())
			return false
		}
		if pauseAt == point {
			holder.Freeze(ctx, pause)
		}
		return true
	}
	order := store.Order{ID: uuid.NewString(), Instance: fmt.Sprintf("i%d", b.Instance), Mode: t.mode.Name}
	if t.mode.Atomic {
		if !at(AtAfterAcquire) || !at(AtBeforeCommit) {
			return rec
		}
		rec.CommitStartMs = t.since(time.Now())
		left, sold, err := t.st.AtomicSale(ctx, sku, order)
		rec.CommitEndMs = t.since(time.Now())
		switch {
		case died():
		case err != nil:
			rec.Kind, rec.Err = classify(err), err.Error()
		case !sold:
			rec.Kind = "soldout"
		default:
			rec.Kind, rec.Remaining, rec.Wrote = "sold", left, true
			if !at(AtAfterCommit) {
				return rec
			}
		}
		return rec
	}
	locker := t.lock[b.Instance]
	key := store.LockKey(sku, t.mode.Name)
	opts := lock.Options{Wait: t.s.wait(), Lease: t.s.lease(), ExplicitLease: b.ExplicitLease, Owner: order.ID}
	// A buyer keeps trying for the lock until its wait is over, whether the lock was busy or a
	// server did not answer (a client retrying its 503s).
	deadline := time.Now().Add(t.s.wait())
	var lease modes.Lease
	var err error
	for {
		opts.Wait = max(time.Until(deadline), time.Millisecond)
		lease, err = locker.Acquire(ctx, key, opts)
		if err == nil || holder.Crashed() || classify(err) != "unavailable" || time.Until(deadline) <= 0 ||
			!lockutil.Sleep(ctx, min(20*time.Millisecond, time.Until(deadline))) {
			break
		}
	}
	if died() {
		return rec
	}
	if err != nil {
		rec.Kind, rec.Err = classify(err), err.Error()
		return rec
	}
	rec.AcquiredMs, rec.Token = t.since(time.Now()), lease.Token()
	order.Token = lease.Token()
	if !at(AtAfterAcquire) {
		return rec
	}
	rec.Kind = t.critical(ctx, lease, order, b, &rec, at)
	if rec.Kind == "crashed" || died() {
		return rec
	}
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := lease.Release(relCtx); errors.Is(err, modes.ErrForeignUnlock) {
		rec.ForeignUnlock = true
	}
	died() // a crash after the write, in the release
	return rec
}

// critical is the read-check-write inside the lock; it returns the kind of answer.
func (t *trial) critical(ctx context.Context, lease modes.Lease, order store.Order, b Buyer, rec *Record, at func(string) bool) string {
	stock, stale, _, err := t.st.StockFenced(ctx, sku, lease.Token())
	if err != nil {
		rec.Err = err.Error()
		return classify(err)
	}
	if stale {
		return "stale"
	}
	rec.ReadMs = t.since(time.Now())
	if stock <= 0 {
		return "soldout"
	}
	if !lockutil.Sleep(ctx, time.Duration(b.WorkMs)*time.Millisecond) {
		return "error"
	}
	if lost := lease.Lost(); lost != nil {
		select {
		case <-lost:
			return "lost"
		default:
		}
	}
	if !at(AtBeforeCommit) {
		return "crashed"
	}
	rec.CommitStartMs = t.since(time.Now())
	cr, err := t.st.Commit(ctx, sku, stock-1, order)
	rec.CommitEndMs = t.since(time.Now())
	switch {
	case err != nil:
		rec.Err = err.Error()
		return classify(err)
	case cr.Stale:
		return "stale"
	}
	rec.Remaining, rec.Wrote = stock-1, true
	if !at(AtAfterCommit) {
		return "crashed" // the write happened; the buyer was never told
	}
	return "sold"
}

// classify names a failed step.
func classify(err error) string {
	switch {
	case errors.Is(err, fault.ErrCrashed):
		return "crashed"
	case errors.Is(err, lock.ErrUnavailable), errors.Is(err, store.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrClosed):
		// Before ErrNotObtained, which a wait that a server did not answer also carries.
		return "unavailable"
	case errors.Is(err, lock.ErrNotObtained):
		return "timeout"
	default:
		return "error"
	}
}

// nemesis applies one server fault at its time.
func (t *trial) nemesis(ctx context.Context, f Fault) {
	if !lockutil.Sleep(ctx, time.Duration(f.AtMs)*time.Millisecond) {
		return
	}
	dur := time.Duration(f.DurMs) * time.Millisecond
	ev := Event{Kind: f.Kind, Master: f.Master, StartMs: t.since(time.Now())}
	var err error
	switch f.Kind {
	case MasterDown:
		s := t.rig.server(f.Master)
		if err = s.Pause(); err == nil {
			lockutil.Sleep(ctx, dur)
			err = s.Resume()
		}
	case MasterRestartEmpty:
		s := t.rig.server(f.Master)
		s.Stop()
		err = s.Restart()
	case ClockFast:
		err = t.clockFast(ctx, f.Master, f.Rate, dur)
	case Failover:
		ev.Master = 0
		err = t.failover(ctx, dur)
	case Partition:
		in := t.rig.inst[f.Instance]
		for _, m := range f.Masters {
			in.cut[m].cutFor(dur)
		}
		if !lockutil.Sleep(ctx, dur) {
			for _, m := range f.Masters {
				in.cut[m].heal()
			}
		}
	}
	ev.EndMs = t.since(time.Now())
	if err != nil {
		ev.Err = err.Error()
	}
	t.mu.Lock()
	t.events = append(t.events, ev)
	t.mu.Unlock()
}

// clockFast makes master m's clock run rate times as fast for dur: every few milliseconds, each
// key's TTL loses (rate-1) times the real time that passed.
func (t *trial) clockFast(ctx context.Context, m int, rate float64, dur time.Duration) error {
	c := t.rig.admin[m]
	end := time.Now().Add(dur)
	last := time.Now()
	carry := 0.0
	for time.Now().Before(end) {
		if !lockutil.Sleep(ctx, 5*time.Millisecond) {
			return ctx.Err()
		}
		now := time.Now()
		carry += (rate - 1) * float64(now.Sub(last).Microseconds()) / 1000
		last = now
		extra := int64(carry)
		if extra < 1 {
			continue
		}
		carry -= float64(extra)
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		// A master that is stopped by another fault meanwhile does not answer: its clock waits.
		_ = clockFastScript.Run(tctx, c, nil, extra).Err()
		cancel()
	}
	return nil
}

// failover holds m0's replication back (the replica stops and its link drops), lets the master
// take writes for lag, kills it, resumes the replica and asks Sentinel for a failover at once
// (SENTINEL FAILOVER: the down-after detection is skipped, the promotion is Sentinel's own), then
// waits until a client that asks Sentinel reaches the promoted replica. The rig rebuilds the
// topology before the next trial.
func (t *trial) failover(ctx context.Context, lag time.Duration) error {
	topo := t.rig.topo
	t.rig.broken = true
	if err := topo.HoldBackReplication(ctx); err != nil {
		return err
	}
	if !lockutil.Sleep(ctx, lag) {
		return ctx.Err()
	}
	topo.Master.Stop()
	if err := topo.Replica.Resume(); err != nil {
		return err
	}
	sc := topo.Sentinels[0].Client()
	defer sc.Close()
	for {
		err := sc.Failover(ctx, topo.Name).Err()
		if err == nil {
			break
		}
		if !lockutil.Sleep(ctx, 20*time.Millisecond) {
			return fmt.Errorf("explore: SENTINEL FAILOVER: %w", err)
		}
	}
	for t.rig.admin[0].Ping(ctx).Err() != nil {
		if !lockutil.Sleep(ctx, 10*time.Millisecond) {
			return fmt.Errorf("explore: the promoted replica: %w", ctx.Err())
		}
	}
	return nil
}
