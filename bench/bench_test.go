package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []int
		want float64
	}{
		{[]int{5, 5, 5, 5}, 1},
		{[]int{8, 0, 0, 0}, 0.25}, // one buyer got everything: 1/n
		{[]int{2, 1}, 0.9},        // (3)² / (2 × 5)
		{[]int{0, 0}, 0},
	} {
		if got := jain(c.xs); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

// TestTargetsCanFail: the target checks compute the targets' ratios from the cells and fail
// when a figure is off.
func TestTargetsCanFail(t *testing.T) {
	cells := []Cell{
		{Strategy: "reentrant", Kind: "mode", Buyers: 1, Rate: 1000, P50Ms: 1},
		{Strategy: "reentrant", Kind: "mode", Buyers: 50, Rate: 800, P50Ms: 40, P99Ms: 120, Jain: 0.9, Starved: 2, LostUpdates: 1},
		{Strategy: "atomic", Kind: "mode", Buyers: 50, Rate: 20000},
		// redlock sells less than redsync and its p99 is only half of redsync's: both fail.
		{Strategy: "redlock", Kind: "mode", Buyers: 50, Rate: 900, P99Ms: 50, Jain: 1},
		{Strategy: RefRedsync, Kind: "reference", Buyers: 50, Rate: 1000, P99Ms: 100},
		// lua is measured against the faster redislock setting (10 ms): it outsells it, but its
		// p99 is half of that setting's, not a quarter (against the 100 ms setting it would pass).
		{Strategy: "lua", Kind: "mode", Buyers: 50, Rate: 3000, P99Ms: 10, Jain: 1},
		{Strategy: RefRedislock100, Kind: "reference", Buyers: 50, Rate: 2000, P99Ms: 1000},
		{Strategy: RefRedislock10, Kind: "reference", Buyers: 50, Rate: 2500, P99Ms: 20},
	}
	got := map[string]Target{}
	for _, tg := range checkTargets(cells, []int{1, 50}, nil) {
		got[tg.Name] = tg
	}
	want := map[string]struct {
		ratio float64
		pass  bool
	}{
		"reentrant: sales/s at 50 ÷ at 1":          {0.8, false},
		"reentrant: Jain at 50":                    {0.9, false},
		"reentrant: starved buyers at 50":          {2, false},
		"reentrant: p99 at 50 ÷ (50 × p50 at 1)":   {2.4, false},
		"atomic ÷ reentrant sales/s at 50":         {25, true},
		"redlock ÷ redsync-default sales/s at 50":  {0.9, false},
		"redlock ÷ redsync-default p99 at 50":      {0.5, false},
		"lua ÷ faster redislock sales/s at 50":     {1.2, true},
		"lua ÷ faster redislock p99 at 50":         {0.5, false},
		"lost updates + oversold, every mode cell": {1, false},
	}
	for name, w := range want {
		tg, ok := got[name]
		if !ok {
			t.Errorf("no target %q; have %v", name, got)
			continue
		}
		if math.Abs(tg.Ratio-w.ratio) > 1e-9 || tg.Pass != w.pass {
			t.Errorf("%s: ratio %v pass %v, want %v %v", name, tg.Ratio, tg.Pass, w.ratio, w.pass)
		}
	}
	for _, name := range []string{"lua ÷ faster redislock sales/s at 50", "lua ÷ faster redislock p99 at 50"} {
		if !strings.Contains(got[name].Figures, RefRedislock10) {
			t.Errorf("%s: figures %q do not name the faster setting %s", name, got[name].Figures, RefRedislock10)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d targets, want %d (only those whose cells ran): %v", len(got), len(want), got)
	}
}

// TestRunSmall runs a short bench on the servers redisproc starts (redis-server when installed,
// miniredis without it or with SECKILL_TEST_REDIS=embedded) and checks the report adds up: every
// cell sold, none with lost updates, fairness and starvation measured, the serial bound computed
// from the measured RTT, commands per sale counted on either kind of server, and the
// reentrant mode's buyers served in line.
func TestRunSmall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Redis servers")
	}
	rep, err := Run(t.Context(), Options{Duration: 600 * time.Millisecond, Warmup: 50 * time.Millisecond, Rounds: 2,
		Concurrency: []int{1, 4}, Strategies: []string{"reentrant", "atomic", RefSpin, RefRedislock10}, Lease: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 8 {
		t.Fatalf("%d cells, want 4 strategies × 2 crowd sizes", len(rep.Cells))
	}
	if rep.Redis.RTT.Median <= 0 {
		t.Fatalf("no RTT measured: %+v", rep.Redis.RTT)
	}
	for _, c := range rep.Cells {
		if c.Sales == 0 || c.Rate <= 0 || c.P50Ms <= 0 || c.P99Ms < c.P50Ms || c.MaxMs < c.P99Ms {
			t.Errorf("%s × %d: implausible figures %+v", c.Strategy, c.Buyers, c)
		}
		if c.LostUpdates != 0 || c.Oversold != 0 {
			t.Errorf("%s × %d: %d lost updates, %d oversold", c.Strategy, c.Buyers, c.LostUpdates, c.Oversold)
		}
		if c.SerialBound <= 0 || c.Jain <= 0 {
			t.Errorf("%s × %d: no serial bound or Jain: %+v", c.Strategy, c.Buyers, c)
		}
		// Each of the k round trips is at least one command the clients send (acquire, GET,
		// commit, release; atomic's one script), counted the same on either server.
		if c.CommandsPerSale < float64(c.RoundTrips) {
			t.Errorf("%s × %d: %.2f commands per sale on %s, want at least k = %d",
				c.Strategy, c.Buyers, c.CommandsPerSale, rep.Redis.Kind, c.RoundTrips)
		}
		if c.RedisCPUUnknown != (rep.Redis.Kind == "miniredis") {
			t.Errorf("%s × %d: Redis CPU unknown = %v on %s", c.Strategy, c.Buyers, c.RedisCPUUnknown, rep.Redis.Kind)
		}
		// The wait distribution the page draws agrees with the table's figures, and the sales
		// per buyer add up to the cell's.
		q := c.WaitQuantilesMs
		if len(q) != len(rep.WaitQuantileP) || !slices.IsSorted(q) || q[50] != c.P50Ms || q[99] != c.P99Ms || q[len(q)-1] != c.MaxMs {
			t.Errorf("%s × %d: wait quantiles %v disagree with p50 %.3f, p99 %.3f, max %.3f", c.Strategy, c.Buyers, q, c.P50Ms, c.P99Ms, c.MaxMs)
		}
		sum := 0
		for _, n := range c.SalesPerBuyer {
			sum += n
		}
		if len(c.SalesPerBuyer) != c.Buyers || sum != c.Sales {
			t.Errorf("%s × %d: sales per buyer %v, want %d buyers adding up to %d", c.Strategy, c.Buyers, c.SalesPerBuyer, c.Buyers, c.Sales)
		}
		if c.Strategy == "reentrant" && c.Buyers == 4 && (c.Jain < 0.9 || c.Starved > 0) {
			t.Errorf("reentrant × 4 is served in line, yet Jain %.3f, %d starved", c.Jain, c.Starved)
		}
	}
	var table, js bytes.Buffer
	if err := Write(&table, rep, false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"strategy", "reentrant", RefSpin, RefRedislock10, "serial bound", "targets", "atomic ÷ reentrant"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
	if err := Write(&js, rep, true); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Cells) != 8 {
		t.Fatalf("JSON does not round-trip (%v):\n%s", err, js.String())
	}
}

func TestUnknownStrategy(t *testing.T) {
	if _, err := Run(t.Context(), Options{Strategies: []string{"nope"}}); err == nil ||
		!strings.Contains(err.Error(), "redsync-default") {
		t.Fatalf("unknown strategy: %v, want an error listing the known ones", err)
	}
}

// TestRunCellCountsEveryAttempt: the waits cover failed attempts at their full duration and an
// attempt still waiting when the window closes at the time it has waited, not only the sales.
func TestRunCellCountsEveryAttempt(t *testing.T) {
	t.Parallel()
	w := timing{warmup: 20 * time.Millisecond, dur: 300 * time.Millisecond, grace: time.Second}
	st := runCell(t.Context(), 2, 2, w, func(ctx context.Context, buyer int) error {
		if buyer == 0 {
			time.Sleep(time.Millisecond)
			return nil
		}
		// Buyer 1 fails after 100 ms, then waits past the window's end.
		time.Sleep(100 * time.Millisecond)
		return errRefTimeout
	})
	if st.perBuyer[1] != 0 || st.errors["lock-timeout"] == 0 {
		t.Fatalf("buyer 1 sold %d, %v errors; want none sold and its timeouts counted", st.perBuyer[1], st.errors)
	}
	slow := 0
	for _, d := range st.byInstance[1] {
		if d >= 50*time.Millisecond {
			slow++
		}
	}
	if slow == 0 || len(st.byInstance[1]) < 2 {
		t.Fatalf("buyer 1's failed attempts are not among the waits: %v", st.byInstance[1])
	}
	if got := percentile(slices.Sorted(slices.Values(st.latencies)), 1); got < 50*time.Millisecond {
		t.Fatalf("the longest wait is %v, want buyer 1's failed attempts (about 100 ms)", got)
	}
}

// TestInstanceTargets: the cross-instance targets compare a mode on many instances with the best
// peer reference there and with itself on one instance, and fail when a figure is off.
func TestInstanceTargets(t *testing.T) {
	cells := []Cell{
		{Strategy: "lua", Buyers: 64, Instances: 1, Rate: 3000, CommandsPerSale: 3},
		{Strategy: "lua", Buyers: 64, Instances: 16, Rate: 2000, P99Ms: 10, Jain: 0.99, CommandsPerSale: 6},
		{Strategy: RefRedislock10, Kind: "reference", Buyers: 64, Instances: 16, Rate: 2500, P99Ms: 100},
		{Strategy: RefRedsync, Kind: "reference", Buyers: 64, Instances: 16, Rate: 1000, P99Ms: 20},
		{Strategy: "reentrant", Buyers: 64, Instances: 1, Rate: 1000},
		{Strategy: "reentrant", Buyers: 64, Instances: 16, Rate: 600},
	}
	got := map[string]Target{}
	for _, tg := range checkTargets(cells, []int{64}, []int{1, 16}) {
		got[tg.Name] = tg
	}
	want := map[string]struct {
		ratio float64
		pass  bool
	}{
		"lua ÷ best peer reference sales/s at 64 buyers on 16 instances": {0.8, false},
		"lua ÷ best peer reference p99 at 64 buyers on 16 instances":     {0.1, true},
		"lua: Jain at 64 buyers on 16 instances":                         {0.99, true},
		"lua: sales/s on 16 instances ÷ on 1, 64 buyers":                 {2000.0 / 3000, false},
		"lua: commands per sale on 16 instances ÷ on 1, 64 buyers":       {2, false},
		"reentrant: sales/s on 16 instances ÷ on 1, 64 buyers":           {0.6, true},
	}
	for name, w := range want {
		tg, ok := got[name]
		if !ok {
			t.Errorf("no target %q; have %v", name, got)
			continue
		}
		if math.Abs(tg.Ratio-w.ratio) > 1e-9 || tg.Pass != w.pass {
			t.Errorf("%s: ratio %v pass %v, want %v %v", name, tg.Ratio, tg.Pass, w.ratio, w.pass)
		}
	}
	if !strings.Contains(got["lua ÷ best peer reference sales/s at 64 buyers on 16 instances"].Figures, RefRedislock10) {
		t.Errorf("the best peer is not redislock-10ms: %v", got)
	}
}
