package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/modes"
	"seckill/internal/rows"
	"seckill/store"
)

// The scenarios of rows 1-11 of docs/lab.md. Each driver provokes its row's anomaly by design
// (faults and timing in multiples of the lease), then records checks on what Redis and the
// buyers report. A later scenario (row 12, the Sentinel failover) registers itself the same
// way from its own file, with a Drive that builds the topology it needs.

// scenarios are the registered scenarios; each scenario's file adds itself from init.
var scenarios = rows.New("lab scenario", func(sc Scenario) (int, string) { return sc.Row, sc.Name })

// register adds a scenario; each scenario's file calls it from init.
func register(sc Scenario) { scenarios.Add(sc) }

// Scenarios lists every scenario in row order.
func Scenarios() []Scenario { return scenarios.All() }

// Names lists the scenario names in row order.
func Names() []string { return scenarios.Names() }

// Lookup returns the scenario called name.
func Lookup(name string) (Scenario, error) {
	sc, ok := scenarios.Get(name)
	if !ok {
		return Scenario{}, fmt.Errorf("%w %q; scenarios: %s", ErrUnknownScenario, name, strings.Join(Names(), ", "))
	}
	return sc, nil
}

// Select returns the named scenarios in row order, or all of them when names is empty.
func Select(names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return Scenarios(), nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if _, err := Lookup(n); err != nil {
			return nil, err
		}
		want[n] = true
	}
	var out []Scenario
	for _, sc := range Scenarios() {
		if want[sc.Name] {
			out = append(out, sc)
		}
	}
	return out, nil
}

// registerMode registers the scenario of a lock mode's own row. Its row, its source and whether
// it is safe come from the mode (modes.Modes), the one place they are stated.
func registerMode(sc Scenario) {
	m, err := modes.LookupMode(sc.Mode)
	if err != nil {
		panic("lab: scenario " + sc.Name + ": " + err.Error())
	}
	sc.Row, sc.Step, sc.Safe = m.Row, m.Source, m.Safe
	register(sc)
}

func init() {
	registerMode(Scenario{Name: "none", Short: "lost updates, oversold", Mode: "none",
		Expect: "lost updates > 0; with stock < buyers, oversold > 0", Drive: driveNone})
	registerMode(Scenario{Name: "setnx", Short: "deadlock", Mode: "setnx",
		Expect: "deadlock: a crashed holder's key has no TTL, every later sale times out",
		Drive:  driveDeadlock(modes.CrashAfterLock)})
	registerMode(Scenario{Name: "setnx-expire", Short: "deadlock", Mode: "setnx-expire",
		Expect: "deadlock: the holder died between SETNX and EXPIRE, the key has no TTL",
		Drive:  driveDeadlock(modes.CrashBeforeExpire)})
	registerMode(Scenario{Name: "setnx-ex", Short: "foreign unlock, overlap, lost", Mode: "setnx-ex",
		Expect: "business time > TTL: A's blind DEL removes B's lock: foreign unlock, overlap, lost updates",
		Drive:  driveSetnxEx})
	registerMode(Scenario{Name: "uuid", Short: "foreign unlock", Mode: "uuid",
		Expect: "the lock expires between A's compare and DEL, B acquires, A deletes B's lock: foreign unlock",
		Drive:  driveUUID})
	registerMode(Scenario{Name: "lua", Short: "overlap, no foreign unlock", Mode: "lua",
		Expect: "no foreign unlock, but business time > TTL lets two holders overlap (no watchdog)",
		Drive:  driveLua})
	registerMode(Scenario{Name: "reentrant", LeaseFactor: 2, Short: "none", Mode: "reentrant",
		Expect: "none: the watchdog holds the lock through 3 leases of business time; a crashed holder's lock expires one lease later",
		Drive:  driveReentrant})
	registerMode(Scenario{Name: "multilock", LeaseFactor: 2, Short: "none", Mode: "multilock",
		Expect: "none with all masters up; with one master down nothing is sold and nothing stays locked",
		Drive:  driveMultilock})
	registerMode(Scenario{Name: "redlock", LeaseFactor: 2, Short: "none", Mode: "redlock",
		Expect: "none with all masters up and with one of three down; with two down nothing is sold",
		Drive:  driveRedlock})
	registerMode(Scenario{Name: "fenced", LeaseFactor: 2, Short: "stale write rejected", Mode: "fenced",
		Expect: "a frozen holder outlives its lease; its stale write is rejected: no lost update",
		Drive:  driveFenced})
	registerMode(Scenario{Name: "atomic", Short: "none, exact stock", Mode: "atomic",
		Expect: "none: exactly the stock is sold, the fastest of all",
		Drive:  driveAtomic})
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// driveNone: many buyers at once, more than the stock, a short business time so that every
// read happens before the first write.
func driveNone(ctx context.Context, e *Env) error {
	const stock, buyers = 10, 30
	if err := e.NewFleet(ctx, e.Lease, stock); err != nil {
		return err
	}
	e.Crowd(ctx, nil, buyers, func(int) Request { return Request{Work: e.Lease / 10} })
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	e.Check("lost updates", "> 0", inv.LostUpdates, inv.LostUpdates > 0)
	e.Check(fmt.Sprintf("oversold (%d buyers, stock %d)", buyers, stock), "> 0", inv.Oversold, inv.Oversold > 0)
	return nil
}

// driveDeadlock: the first holder crashes (after the lock, or between SETNX and EXPIRE); later
// buyers wait two leases each and must all time out while the key keeps no TTL.
func driveDeadlock(crash string) func(ctx context.Context, e *Env) error {
	return func(ctx context.Context, e *Env) error {
		const stock, buyers = 10, 6
		wait := 2 * e.Lease
		if err := e.NewFleet(ctx, wait, stock); err != nil {
			return err
		}
		key := e.LockKey(e.SKU)
		first := e.Buy(ctx, nil, 0, Request{Crash: crash})
		crashed := time.Now()
		e.Check("first holder (crash="+crash+")", "crashed", first.Kind, first.Kind == "crashed")
		ttl1, err := e.Data.Do(ctx, "pttl", key).Int64()
		if err != nil {
			return fmt.Errorf("lab: PTTL %s: %w", key, err)
		}
		e.Check("lock key TTL right after the crash", "-1 (no TTL)", ttl1, ttl1 == -1)
		later := e.Crowd(ctx, nil, buyers, func(int) Request { return Request{} })
		timeouts := 0
		for _, o := range later {
			if o.Kind == "timeout" {
				timeouts++
			}
		}
		e.Check(fmt.Sprintf("later buyers timed out (each waited %s)", ms(wait)), fmt.Sprint(buyers), timeouts, timeouts == buyers)
		ttl2, err := e.Data.Do(ctx, "pttl", key).Int64()
		if err != nil {
			return fmt.Errorf("lab: PTTL %s: %w", key, err)
		}
		since := time.Since(crashed)
		e.Check(fmt.Sprintf("lock key TTL %s (%.1f leases) after the crash", ms(since), float64(since)/float64(e.Lease)),
			"-1 (no TTL)", ttl2, ttl2 == -1)
		inv, err := e.Snapshot(ctx, e.SKU)
		if err != nil {
			return err
		}
		e.Check("sold", "0", inv.Sold, inv.Sold == 0)
		e.SetDeadlock(ttl1 == -1 && ttl2 == -1 && timeouts == buyers && inv.Sold == 0)
		return nil
	}
}

// driveSetnxEx: four buyers whose business time is 1.5 leases: each lock expires under its
// holder, the next buyer takes it, and the first holder's blind DEL removes the second's lock.
func driveSetnxEx(ctx context.Context, e *Env) error {
	const stock, buyers = 20, 4
	if err := e.NewFleet(ctx, 6*e.Lease, stock); err != nil {
		return err
	}
	out := e.Crowd(ctx, nil, buyers, func(int) Request { return Request{Work: e.Lease * 3 / 2} })
	told := 0
	for _, o := range out {
		if o.ForeignUnlock {
			told++
		}
	}
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	e.Check("foreign unlocks (a DEL removed another holder's lock)", "> 0", inv.ForeignUnlocks, inv.ForeignUnlocks > 0)
	e.Check("overlaps (two holders inside at once)", "> 0", inv.Overlaps, inv.Overlaps > 0)
	e.Check("lost updates", "> 0", inv.LostUpdates, inv.LostUpdates > 0)
	e.Note("%d of %d buyers were told their release deleted someone else's lock", told, buyers)
	return nil
}

// driveUUID: every holder pauses 1.5 leases between its value check and its DEL. The first
// holder's lock expires during its pause and the next buyer takes it, so the first holder's DEL
// removes the second's lock; the later holders get the same chance again.
func driveUUID(ctx context.Context, e *Env) error {
	const stock, followers = 20, 2
	if err := e.NewFleet(ctx, 6*e.Lease, stock); err != nil {
		return err
	}
	key := e.LockKey(e.SKU)
	pause := Request{PauseBeforeDel: e.Lease * 3 / 2}
	var a Outcome
	waits := []func(){Go(func() { a = e.Buy(ctx, nil, 0, pause) })}
	// The others start once A holds the lock, so A is the first holder.
	if err := e.WaitHeld(ctx, e.Data, key); err != nil {
		waits[0]()
		return err
	}
	for k := 1; k <= followers; k++ {
		waits = append(waits, Go(func() { e.Buy(ctx, nil, k, pause) }))
	}
	for _, w := range waits {
		w()
	}
	told := 0
	for _, o := range e.Outcomes() {
		if o.ForeignUnlock {
			told++
		}
	}
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	e.Check("first holder A (paused before DEL)", "sold", a.Kind, a.Kind == "sold")
	e.Check("holders told their DEL removed another holder's lock", ">= 1", told, told >= 1)
	e.Check("foreign unlocks counted in Redis", "> 0", inv.ForeignUnlocks, inv.ForeignUnlocks > 0)
	e.Note("A's DEL removed the next holder's lock: %v", a.ForeignUnlock)
	return nil
}

// driveLua: three buyers whose business time is 1.5 leases: locks expire under their holders
// and the next buyer enters while the previous one is still inside; the compare-and-delete
// release refuses to delete the newer holder's lock.
func driveLua(ctx context.Context, e *Env) error {
	const stock, buyers = 20, 3
	if err := e.NewFleet(ctx, 6*e.Lease, stock); err != nil {
		return err
	}
	out := e.Crowd(ctx, nil, buyers, func(int) Request { return Request{Work: e.Lease * 3 / 2} })
	told, expired := 0, 0
	for _, o := range out {
		if o.ForeignUnlock {
			told++
		}
		if o.ReleaseError != "" {
			expired++
		}
	}
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	e.Check("overlaps (business time 1.5 leases, no watchdog)", "> 0", inv.Overlaps, inv.Overlaps > 0)
	e.Check("foreign unlocks counted in Redis", "0", inv.ForeignUnlocks, inv.ForeignUnlocks == 0)
	e.Check("buyers told of a foreign unlock", "0", told, told == 0)
	e.Check("holders whose release found the lock no longer theirs (refused, not deleted)", "> 0", expired, expired > 0)
	return nil
}

// safeChecks are the checks every safe row makes on its main experiment. wantSold buyers must
// all sell, except that a holder told its lock was lost before its write (the watchdog found
// the key gone: the process stalled past the lease) may refuse to write; that is the lock
// doing its job, and it is noted. Where the stock runs out, wantSold is all of it.
func safeChecks(e *Env, inv store.Inventory, wantSold int64, overlapOK bool) {
	if !overlapOK {
		e.Check("overlaps", "0", inv.Overlaps, inv.Overlaps == 0)
	}
	e.Check("lost updates", "0", inv.LostUpdates, inv.LostUpdates == 0)
	e.Check("oversold", "0", inv.Oversold, inv.Oversold == 0)
	e.Check("foreign unlocks", "0", inv.ForeignUnlocks, inv.ForeignUnlocks == 0)
	lost := int64(e.Count("lost"))
	// Where the stock is what ends the sales, a holder that did not write left its unit to a
	// later buyer: all of it is sold all the same.
	soldOut := inv.Stock == 0 && inv.Sold == wantSold
	e.Check("sold (+ holders that found their lock lost and did not write)", fmt.Sprint(wantSold),
		fmt.Sprintf("%d + %d", inv.Sold, lost), inv.Sold+lost == wantSold || soldOut)
	if lost > 0 {
		e.Note("%d holder(s) found their lock lost before writing (a stall longer than the lease) and did not write", lost)
	}
}

// driveReentrant: a holder crashes right after acquiring; one buyer with a business time of
// three leases and ten short buyers queue behind it. The crashed lock must expire about one
// lease later (no deadlock), the watchdog must carry the long buyer through its three leases,
// and nobody may ever be inside together.
func driveReentrant(ctx context.Context, e *Env) error {
	const stock, short = 20, 10
	if err := e.NewFleet(ctx, 8*e.Lease, stock); err != nil {
		return err
	}
	key := e.LockKey(e.SKU)
	crash := e.Buy(ctx, nil, 0, Request{Crash: modes.CrashAfterLock})
	crashed := time.Now()
	e.Check("first holder (crash=after-lock)", "crashed", crash.Kind, crash.Kind == "crashed")
	fields, err := e.Data.HKeys(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("lab: HKEYS %s: %w", key, err)
	}
	ttl, err := e.Data.Do(ctx, "pttl", key).Int64()
	if err != nil {
		return fmt.Errorf("lab: PTTL %s: %w", key, err)
	}
	crashed = time.Now()
	if len(fields) != 1 {
		e.Check("holder fields in the lock hash after the crash", "1", len(fields), false)
		return nil
	}
	e.Check("TTL of the crashed holder's lock", fmt.Sprintf("0-%s (one lease from its acquire)", ms(e.Lease)),
		ttl, ttl > 0 && ttl <= e.Lease.Milliseconds())
	var long Outcome
	waits := []func(){Go(func() { long = e.Buy(ctx, nil, 1, Request{Work: 3 * e.Lease}) })}
	for k := range short {
		waits = append(waits, Go(func() { e.Buy(ctx, nil, k, Request{Work: 5 * time.Millisecond}) }))
	}
	freed, err := waitFor(ctx, 4*e.Lease, 5*time.Millisecond, func() (bool, error) {
		n, err := e.Data.HExists(ctx, key, fields[0]).Result()
		return !n, err
	})
	freedAfter := time.Since(crashed)
	for _, w := range waits {
		w()
	}
	if err != nil {
		return fmt.Errorf("lab: watch %s: %w", key, err)
	}
	e.SetDeadlock(!freed)
	if freed {
		// Freed when that TTL ran out: nobody renewed the dead holder's lock (a lease is
		// allowed for the waiters' scheduling and the polling).
		want := time.Duration(ttl) * time.Millisecond
		e.Check("crashed holder's lock freed, after its TTL", fmt.Sprintf("%s-%s", ms(want-e.Lease/4), ms(want+e.Lease)),
			ms(freedAfter), freedAfter >= want-e.Lease/4 && freedAfter <= want+e.Lease)
	} else {
		e.Check("crashed holder's lock expired", "within 4 leases", "still held: deadlock", false)
	}
	e.Check("buyer with 3 leases of business time", "sold", long.Kind, long.Kind == "sold")
	e.Check("watchdog renewals during those 3 leases", ">= 2", long.Renewals, long.Renewals >= 2)
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	safeChecks(e, inv, short+1, false)
	return nil
}

// driveMultilock: the main experiment on the configured masters, then (unless outages are
// off) one master of three the lab started itself is stopped: nothing may be sold and no lock
// key may stay behind on the others.
func driveMultilock(ctx context.Context, e *Env) error {
	if err := driveSafeCrowd(ctx, e, 2, true); err != nil {
		return err
	}
	if e.runner.NoOutages {
		e.Note("outage phase skipped (outages are off)")
		return nil
	}
	srv, clients, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	f, err := e.newFleet(ctx, e.SKU+"-1down", e.Data, clients, e.Lease, 10)
	if err != nil {
		return err
	}
	srv[1].Stop()
	mark := e.PhaseMark()
	e.Crowd(ctx, f, 4, func(int) Request { return Request{Work: 5 * time.Millisecond} })
	left, err := e.lockKeysOn(ctx, f.SKU, clients[0], clients[2])
	if err != nil {
		return err
	}
	p, err := e.AddPhase(ctx, "master 2 of 3 stopped", f, mark, left)
	if err != nil {
		return err
	}
	e.Check("one master down: sold", "0", p.Sold, p.Sold == 0)
	e.Check("one master down: buyers failed cleanly (timeout or unavailable)", fmt.Sprintf("%d of %d", 4, 4),
		p.Outcomes["timeout"]+p.Outcomes["unavailable"], p.Outcomes["timeout"]+p.Outcomes["unavailable"] == 4)
	e.Check("one master down: lock keys left on the live masters", "0", left, left == 0)
	return nil
}

// driveRedlock: the main experiment on the configured masters, then on three masters the lab
// started itself: with one stopped every buyer still sells with no lost update; with two
// stopped nothing is sold.
func driveRedlock(ctx context.Context, e *Env) error {
	if err := driveSafeCrowd(ctx, e, 2, false); err != nil {
		return err
	}
	if e.runner.NoOutages {
		e.Note("outage phases skipped (outages are off)")
		return nil
	}
	srv, clients, err := e.ownMasters(3)
	if err != nil {
		return err
	}
	// Both fleets are reset before any master stops (a reset clears lock keys on every master).
	one, err := e.newFleet(ctx, e.SKU+"-1down", e.Data, clients, 4*e.Lease, 20)
	if err != nil {
		return err
	}
	two, err := e.newFleet(ctx, e.SKU+"-2down", e.Data, clients, e.Lease, 20)
	if err != nil {
		return err
	}
	srv[2].Stop()
	const buyers = 8
	mark := e.PhaseMark()
	e.Crowd(ctx, one, buyers, func(int) Request { return Request{Work: 5 * time.Millisecond} })
	p, err := e.AddPhase(ctx, "master 3 of 3 stopped", one, mark, 0)
	if err != nil {
		return err
	}
	e.Check("one of three down: sold", fmt.Sprint(buyers), p.Sold, p.Sold == buyers)
	e.Check("one of three down: lost updates", "0", p.Lost, p.Lost == 0)
	e.Check("one of three down: overlaps", "0", p.Overlaps, p.Overlaps == 0)
	srv[1].Stop()
	mark = e.PhaseMark()
	e.Crowd(ctx, two, 4, func(int) Request { return Request{Work: 5 * time.Millisecond} })
	stuck, left, err := e.stuckKeysOn(ctx, two.SKU, clients[0])
	if err != nil {
		return err
	}
	p, err = e.AddPhase(ctx, "masters 2 and 3 of 3 stopped", two, mark, left)
	if err != nil {
		return err
	}
	e.Check("two of three down: sold", "0", p.Sold, p.Sold == 0)
	e.Check("two of three down: buyers failed cleanly (timeout or unavailable)", "4 of 4",
		p.Outcomes["timeout"]+p.Outcomes["unavailable"], p.Outcomes["timeout"]+p.Outcomes["unavailable"] == 4)
	e.Check("two of three down: lock keys on the live master that outlive one lease", "0", stuck, stuck == 0)
	return nil
}

// driveSafeCrowd is the main experiment of the multi-master rows: one buyer with a business
// time of longLeases leases (renewed on every master) and ten short buyers. strict: no lock key
// may be left on any master afterwards (multilock's all-or-nothing); otherwise only keys that
// would outlive a lease count (Redlock's clean-up of a lost attempt is best effort).
func driveSafeCrowd(ctx context.Context, e *Env, longLeases int, strict bool) error {
	const stock, short = 20, 10
	if err := e.NewFleet(ctx, time.Duration(longLeases+6)*e.Lease, stock); err != nil {
		return err
	}
	var long Outcome
	waits := []func(){Go(func() {
		long = e.Buy(ctx, nil, 0, Request{Work: time.Duration(longLeases) * e.Lease})
	})}
	for k := range short {
		waits = append(waits, Go(func() { e.Buy(ctx, nil, k+1, Request{Work: 5 * time.Millisecond}) }))
	}
	for _, w := range waits {
		w()
	}
	e.Check(fmt.Sprintf("buyer with %d leases of business time", longLeases), "sold", long.Kind, long.Kind == "sold")
	e.Check("renewals during that business time", ">= 1", long.Renewals, long.Renewals >= 1)
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	safeChecks(e, inv, short+1, false)
	e.Check("lock timeouts", "0", e.Count("timeout"), e.Count("timeout") == 0)
	stuck, left, err := e.stuckKeysOn(ctx, e.SKU, e.Masters...)
	if err != nil {
		return err
	}
	if strict {
		e.Check("lock keys left on the masters after the last release", "0", left, left == 0)
		return nil
	}
	// Redlock's clean-up of a lost attempt is best effort (each node has a short timeout): a
	// partial win may stay behind until its TTL ends. Only a key that outlives a lease is wrong.
	e.Check("lock keys left on the masters that outlive one lease", "0", stuck, stuck == 0)
	if left > 0 {
		e.Note("%d lock key(s) of a failed attempt were left on the masters, expiring within one lease", left)
	}
	return nil
}

// driveFenced: holder A freezes (with its watchdog) for two leases between its lease check and
// its write; its lock expires, later buyers take it with newer tokens and write; A's write then
// carries an older token and is rejected.
func driveFenced(ctx context.Context, e *Env) error {
	const stock, others = 20, 8
	if err := e.NewFleet(ctx, 6*e.Lease, stock); err != nil {
		return err
	}
	home := e.Data // where the lock key shows: the data Redis, or the masters of redlock-fenced
	if len(e.Fleet.Masters) > 0 && e.Scenario.Mode == "redlock-fenced" {
		home = e.Fleet.Masters[0]
	}
	a, inv, err := pausedHolder(ctx, e, home, others)
	if err != nil {
		return err
	}
	e.Check("frozen holder A's write", "rejected as stale (told to A)", a.Kind, a.Kind == "stale")
	e.Check("stale writes rejected in Redis", "1", inv.StaleRejected, inv.StaleRejected == 1)
	safeChecks(e, inv, others, true)
	e.Note("overlaps %d: the frozen holder was still inside when its lease ran out; the fence, not the lock, kept its write out", inv.Overlaps)
	return nil
}

// pausedHolder is Kleppmann's paused holder: buyer A acquires (its key shows on server) and
// pauses, watchdog and all, for two leases between its last check of the lock and its write;
// meanwhile `others` buyers with a short business time take the lock in turn. It answers what A
// was told and the figures read back from Redis.
func pausedHolder(ctx context.Context, e *Env, server redis.UniversalClient, others int) (Outcome, store.Inventory, error) {
	var a Outcome
	waitA := Go(func() { a = e.Buy(ctx, nil, 0, Request{Freeze: 2 * e.Lease}) })
	if err := e.WaitHeld(ctx, server, e.LockKey(e.SKU)); err != nil {
		waitA()
		return a, store.Inventory{}, err
	}
	var waits []func()
	for k := range others {
		waits = append(waits, Go(func() { e.Buy(ctx, nil, k+1, Request{Work: 5 * time.Millisecond}) }))
	}
	waitA()
	for _, w := range waits {
		w()
	}
	inv, err := e.Snapshot(ctx, e.SKU)
	return a, inv, err
}

// driveAtomic: 90 buyers at once for 50 units, no lock.
func driveAtomic(ctx context.Context, e *Env) error {
	const stock, buyers = 50, 90
	if err := e.NewFleet(ctx, e.Lease, stock); err != nil {
		return err
	}
	start := time.Now()
	e.Crowd(ctx, nil, buyers, func(int) Request { return Request{} })
	took := time.Since(start)
	inv, err := e.Snapshot(ctx, e.SKU)
	if err != nil {
		return err
	}
	safeChecks(e, inv, stock, true)
	e.Check("stock left", "0", inv.Stock, inv.Stock == 0)
	e.Check("sold-out answers", fmt.Sprint(buyers-stock), e.Count("soldout"), e.Count("soldout") == buyers-stock)
	e.Note("%d sales answered in %s (%.0f sales/s, in process)", buyers, ms(took), float64(buyers)/took.Seconds())
	return nil
}
