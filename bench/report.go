package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"seckill/internal/benchreport"
	"seckill/store"
)

func newCell(s Strategy, buyers, instances int, st cellStats, inv store.Inventory, rtt time.Duration) Cell {
	c := Cell{Strategy: s.Name, Kind: s.Kind, Locked: s.Locked, Buyers: buyers, Instances: instances, RoundTrips: s.RoundTrips,
		LostUpdates: inv.LostUpdates, Oversold: inv.Oversold, Jain: jain(st.perBuyer),
		LongestGapMs: msf(st.longest)}
	for _, n := range st.perBuyer {
		c.Sales += n
		if n == 0 {
			c.Starved++
		}
	}
	c.Rate = float64(c.Sales) / st.elapsed.Seconds()
	c.P50Ms, c.P99Ms = msf(percentile(st.latencies, 0.5)), msf(percentile(st.latencies, 0.99))
	if len(st.latencies) > 0 {
		c.MaxMs = msf(st.latencies[len(st.latencies)-1])
		for _, p := range WaitQuantileP {
			c.WaitQuantilesMs = append(c.WaitQuantilesMs, msf(percentile(st.latencies, p)))
		}
	}
	c.SalesPerBuyer = slices.Clone(st.perBuyer)
	if len(st.errors) > 0 {
		c.Errors = st.errors
	}
	// Per instance only when every instance had buyers (one buyer leaves the second empty).
	if !slices.ContainsFunc(st.byInstance, func(l []time.Duration) bool { return len(l) == 0 }) {
		for _, l := range st.byInstance {
			s := slices.Clone(l)
			slices.Sort(s)
			c.InstanceP50Ms = append(c.InstanceP50Ms, msf(percentile(s, 0.5)))
		}
	}
	if rtt > 0 && s.RoundTrips > 0 {
		c.SerialBound = 1 / (float64(s.RoundTrips) * rtt.Seconds())
		c.OfBound = c.Rate / c.SerialBound
	}
	return c
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// The report's types are package benchreport's, which the dashboard reads without this package.
type (
	Report  = benchreport.Report
	Cell    = benchreport.Cell
	Target  = benchreport.Target
	RTT     = benchreport.RTT
	Machine = benchreport.Machine
)

// WaitQuantileP are the probabilities a cell's wait distribution is kept at.
var WaitQuantileP = benchreport.WaitQuantileP

// lockedSafe are the lock modes the per-mode targets apply to (atomic takes no lock).
var lockedSafe = []string{"lua", "reentrant", "multilock", "redlock", "fenced", "fair"}

// checkTargets computes the targets from the cells; a target whose cells were not run is left
// out. The single-instance targets are read at the fewest instances run, the cross-instance
// ones at the most.
func checkTargets(cells []Cell, conc, instances []int) []Target {
	lo, hi := slices.Min(conc), slices.Max(conc)
	few, many := 1, 1
	if len(instances) > 0 {
		few, many = slices.Min(instances), slices.Max(instances)
	}
	findAt := func(name string, n, inst int) *Cell {
		for i := range cells {
			if cells[i].Strategy == name && cells[i].Buyers == n && max(cells[i].Instances, 1) == inst {
				return &cells[i]
			}
		}
		return nil
	}
	find := func(name string, n int) *Cell { return findAt(name, n, few) }
	var out []Target
	atLeast := func(name string, ratio, limit float64, figures string) {
		out = append(out, Target{Name: name, Want: fmt.Sprintf("≥ %g", limit), Ratio: ratio, Figures: figures, Pass: ratio >= limit})
	}
	atMost := func(name string, ratio, limit float64, figures string) {
		out = append(out, Target{Name: name, Want: fmt.Sprintf("≤ %g", limit), Ratio: ratio, Figures: figures, Pass: ratio <= limit})
	}
	if hi > lo {
		for _, m := range lockedSafe {
			one, many := find(m, lo), find(m, hi)
			if one == nil || many == nil {
				continue
			}
			atLeast(fmt.Sprintf("%s: sales/s at %d ÷ at %d", m, hi, lo), ratio(many.Rate, one.Rate), 0.9,
				fmt.Sprintf("%.0f / %.0f", many.Rate, one.Rate))
			atLeast(fmt.Sprintf("%s: Jain at %d", m, hi), many.Jain, 0.95, fmt.Sprintf("%.4f", many.Jain))
			atMost(fmt.Sprintf("%s: starved buyers at %d", m, hi), float64(many.Starved), 0,
				fmt.Sprintf("%d of %d", many.Starved, hi))
			serial := float64(hi) * one.P50Ms
			atMost(fmt.Sprintf("%s: p99 at %d ÷ (%d × p50 at %d)", m, hi, hi, lo), ratio(many.P99Ms, serial), 2,
				fmt.Sprintf("%.2f ms / (%d × %.3f ms)", many.P99Ms, hi, one.P50Ms))
		}
	}
	// Against the references, in the largest crowd: at least their throughput, at a quarter of
	// their p99 or less (a fair line must not pay for its fairness in sales, and must cut the
	// tail that retry-and-sleep locks leave).
	if rl, rs := find("redlock", hi), find(RefRedsync, hi); rl != nil && rs != nil {
		atLeast(fmt.Sprintf("redlock ÷ redsync-default sales/s at %d", hi), ratio(rl.Rate, rs.Rate), 1,
			fmt.Sprintf("%.0f / %.0f", rl.Rate, rs.Rate))
		atMost(fmt.Sprintf("redlock ÷ redsync-default p99 at %d", hi), ratio(rl.P99Ms, rs.P99Ms), 0.25,
			fmt.Sprintf("%.2f ms / %.2f ms", rl.P99Ms, rs.P99Ms))
	}
	// lua against the faster of the redislock settings that ran (the same single-Redis
	// SET NX PX lock, with the library's own retry loop).
	var best *Cell
	for _, name := range refRedislock {
		if c := find(name, hi); c != nil && (best == nil || c.Rate > best.Rate) {
			best = c
		}
	}
	if lua := find("lua", hi); lua != nil && best != nil {
		atLeast(fmt.Sprintf("lua ÷ faster redislock sales/s at %d", hi), ratio(lua.Rate, best.Rate), 1,
			fmt.Sprintf("%.0f / %.0f (%s)", lua.Rate, best.Rate, best.Strategy))
		atMost(fmt.Sprintf("lua ÷ faster redislock p99 at %d", hi), ratio(lua.P99Ms, best.P99Ms), 0.25,
			fmt.Sprintf("%.2f ms / %.2f ms (%s)", lua.P99Ms, best.P99Ms, best.Strategy))
	}
	// The fair lock queues every waiter in Redis: it may cost some throughput, not most of it.
	if fa, re := find("fair", hi), find("reentrant", hi); fa != nil && re != nil {
		atLeast(fmt.Sprintf("fair ÷ reentrant sales/s at %d", hi), ratio(fa.Rate, re.Rate), 0.7,
			fmt.Sprintf("%.0f / %.0f", fa.Rate, re.Rate))
	}
	if at, re := find("atomic", hi), find("reentrant", hi); at != nil && re != nil {
		atLeast(fmt.Sprintf("atomic ÷ reentrant sales/s at %d", hi), ratio(at.Rate, re.Rate), 10,
			fmt.Sprintf("%.0f / %.0f", at.Rate, re.Rate))
	}
	if many > few {
		out = append(out, instanceTargets(findAt, hi, few, many)...)
	}
	// Safety under load: no safe mode may lose an update or oversell, at any crowd size.
	var lost, over int64
	var seen []string
	for _, c := range cells {
		if c.Kind == "mode" {
			lost += c.LostUpdates
			over += c.Oversold
			if !slices.Contains(seen, c.Strategy) {
				seen = append(seen, c.Strategy)
			}
		}
	}
	if len(seen) > 0 {
		atMost("lost updates + oversold, every mode cell", float64(lost+over), 0,
			fmt.Sprintf("%d + %d over %s", lost, over, strings.Join(seen, ", ")))
	}
	return out
}

// instanceTargets are the targets across instances (issue 22), at the largest crowd: with the
// buyers spread over the most instances run, the modes that wake one waiter per release (lua,
// fenced, fair) sell at least as much as the best peer reference there, at a quarter of its p99
// or less, fairly, and keep most of their own rate and commands per sale at the fewest
// instances; reentrant, which keeps Redisson's wake-up of every process, keeps half its rate.
func instanceTargets(findAt func(string, int, int) *Cell, hi, few, many int) []Target {
	var out []Target
	add := func(name, want string, r, limit float64, pass bool, figures string) {
		out = append(out, Target{Name: name, Want: fmt.Sprintf("%s %g", want, limit), Ratio: r, Figures: figures, Pass: pass})
	}
	at := fmt.Sprintf("at %d buyers on %d instances", hi, many)
	var best *Cell
	for _, name := range peerRefs {
		if c := findAt(name, hi, many); c != nil && (best == nil || c.Rate > best.Rate) {
			best = c
		}
	}
	for _, m := range []string{"lua", "fenced", "fair"} {
		c := findAt(m, hi, many)
		if c == nil {
			continue
		}
		if best != nil {
			r := ratio(c.Rate, best.Rate)
			add(fmt.Sprintf("%s ÷ best peer reference sales/s %s", m, at), "≥", r, 1, r >= 1,
				fmt.Sprintf("%.0f / %.0f (%s)", c.Rate, best.Rate, best.Strategy))
			r = ratio(c.P99Ms, best.P99Ms)
			add(fmt.Sprintf("%s ÷ best peer reference p99 %s", m, at), "≤", r, 0.25, r <= 0.25,
				fmt.Sprintf("%.2f ms / %.2f ms (%s)", c.P99Ms, best.P99Ms, best.Strategy))
		}
		add(fmt.Sprintf("%s: Jain %s", m, at), "≥", c.Jain, 0.95, c.Jain >= 0.95, fmt.Sprintf("%.4f", c.Jain))
		if one := findAt(m, hi, few); one != nil {
			r := ratio(c.Rate, one.Rate)
			add(fmt.Sprintf("%s: sales/s on %d instances ÷ on %d, %d buyers", m, many, few, hi), "≥", r, 0.8, r >= 0.8,
				fmt.Sprintf("%.0f / %.0f", c.Rate, one.Rate))
			r = ratio(c.CommandsPerSale, one.CommandsPerSale)
			add(fmt.Sprintf("%s: commands per sale on %d instances ÷ on %d, %d buyers", m, many, few, hi), "≤", r, 1.5, r <= 1.5,
				fmt.Sprintf("%.2f / %.2f", c.CommandsPerSale, one.CommandsPerSale))
		}
	}
	if c, one := findAt("reentrant", hi, many), findAt("reentrant", hi, few); c != nil && one != nil {
		r := ratio(c.Rate, one.Rate)
		add(fmt.Sprintf("reentrant: sales/s on %d instances ÷ on %d, %d buyers", many, few, hi), "≥", r, 0.5, r >= 0.5,
			fmt.Sprintf("%.0f / %.0f", c.Rate, one.Rate))
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func writeTable(w io.Writer, rep Report) error {
	rtt := rep.Redis.RTT
	fmt.Fprintf(w, "machine: %d CPU (%s), %s/%s, %s\n", rep.Machine.CPUs, rep.Machine.CPU, rep.Machine.OS, rep.Machine.Arch, rep.Machine.Go)
	fmt.Fprintf(w, "redis: %s %s on loopback (data + 3 masters); RTT (PING) median %.1f µs, p99 %.1f µs over %d\n",
		rep.Redis.Kind, rep.Redis.Version, float64(rtt.Median.Nanoseconds())/1000, float64(rtt.P99.Nanoseconds())/1000, rtt.Samples)
	fmt.Fprintf(w, "run: %d ms measured per cell in %d rounds (each after %d ms of warm-up; rounds go up and down the crowd sizes),\n",
		rep.DurationMs, rep.Rounds, rep.WarmupMs)
	fmt.Fprintf(w, "     lease %d ms, one key, closed loop (a buyer buys again as soon as it is served); %.0f s in all\n\n",
		rep.LeaseMs, float64(rep.ElapsedMs)/1000)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tinst\tbuyers\tsales/s\tp50 ms\tp99 ms\tmax ms\tJain\tstarved\tlongest gap ms\tlost\terrors\tcmds/sale\tCPU µs/sale\tbusy\tk\tbound/s\tof bound\t")
	for _, c := range rep.Cells {
		cpu := fmt.Sprintf("%.0f+%.0f", c.ClientCPUPerSaleUs, c.RedisCPUPerSaleUs)
		if c.RedisCPUUnknown {
			cpu = fmt.Sprintf("%.0f+?", c.ClientCPUPerSaleUs)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%.4f\t%d\t%.0f\t%d\t%s\t%.1f\t%s\t%.0f%%\t%d\t%.0f\t%.0f%%\t\n",
			c.Strategy, c.Instances, c.Buyers, c.Rate, c.P50Ms, c.P99Ms, c.MaxMs, c.Jain, c.Starved, c.LongestGapMs,
			c.LostUpdates+c.Oversold, errorsText(c.Errors), c.CommandsPerSale, cpu,
			c.BusyPct, c.RoundTrips, c.SerialBound, 100*c.OfBound)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range rep.Cells {
		switch {
		case len(c.InstanceNames) > 0:
			fmt.Fprintf(w, "%s × %d: median lock wait by instance (its waitMs):", c.Strategy, c.Buyers)
			for i, name := range c.InstanceNames {
				fmt.Fprintf(w, " %s %.3f", name, c.InstanceP50Ms[i])
			}
			fmt.Fprintln(w, " ms")
		case len(c.InstanceP50Ms) > 0:
			fmt.Fprintf(w, "%s × %d on %d instances: p50 wait by instance %v ms\n", c.Strategy, c.Buyers, c.Instances, c.InstanceP50Ms)
		}
	}
	fmt.Fprintln(w, "\ninst = service instances the buyers were spread over, each with its own clients, locks and subscriptions;")
	fmt.Fprintln(w, "p50/p99/max = waits of every attempt in the window (failed ones in full, unfinished ones as waited so far);")
	fmt.Fprintln(w, "k = round trips in the critical section; bound/s = 1 / (k × RTT median), the serial bound of one key")
	fmt.Fprintln(w, "(a lock lets one sale through at a time; atomic holds no lock, so its buyers overlap and can exceed it);")
	fmt.Fprintln(w, "cmds/sale = commands the bench's clients sent to the four servers per unit sold, counted by a client hook")
	fmt.Fprintln(w, "(a script call counts once, not the commands it runs inside Redis; a pipeline counts each command in it);")
	fmt.Fprintln(w, "CPU µs/sale = this process + the four servers per unit sold; busy = both against all CPUs of the machine.")
	if slices.ContainsFunc(rep.Cells, func(c Cell) bool { return c.RedisCPUUnknown }) {
		fmt.Fprintln(w, "\"+?\": the servers do not report their CPU (in-process miniredis: counted in this process's share).")
	}
	if len(rep.Targets) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\ntargets, all from this run:")
	return benchreport.WriteTargets(w, rep.Targets)
}

func errorsText(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}
