package bench

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"seckill/service"

	"github.com/seckill-lab/seckill/lock"
)

// saleFunc is buyer's attempt to buy one unit (buyers are numbered from 0); nil means sold.
type saleFunc func(ctx context.Context, buyer int) error

// timing is the part of a round that is measured.
type timing struct {
	warmup, dur time.Duration
	// grace is how long buyers still in a sale when the window ends may take to finish it
	// before their context is cancelled (they never start a new one).
	grace time.Duration
	// pause is how long a buyer rests before each attempt (0: none, a closed loop).
	pause time.Duration
}

// cellStats is what the buyers of one cell saw inside the measured windows.
type cellStats struct {
	perBuyer []int // sales per buyer that completed inside the window
	// latencies are the waits of every attempt a buyer made in the window, not only those that
	// sold: an attempt that ended inside the window (sold or failed) at its full duration, one
	// still running when the window closed at the time it had taken so far. So a strategy that
	// lets one buyer re-take the lock while the others wait shows the others' wait too.
	latencies []time.Duration
	errors    map[string]int // failed attempts inside the window, by kind
	elapsed   time.Duration  // the window's length as measured
	longest   time.Duration  // the longest time any buyer went without a sale inside the window
	// byInstance holds the latencies (every attempt, as above) by service instance (buyer b on
	// instance b mod n) when the buyers are spread over n > 1 instances.
	byInstance [][]time.Duration
}

// runCell runs buyers goroutines that call sale in a closed loop (a buyer starts its next
// purchase as soon as the last one ends, as a seckill crowd hammering one button does, or
// w.pause after it) and measures only what completes between warmup and warmup+dur.
func runCell(ctx context.Context, buyers, instances int, w timing, sale saleFunc) cellStats {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	from, to := start.Add(w.warmup), start.Add(w.warmup+w.dur)

	stats := make([]buyerStats, buyers)
	var wg sync.WaitGroup
	for b := range buyers {
		wg.Go(func() { stats[b].buy(ctx, b, from, to, w.pause, sale) })
	}
	// Buyers stop starting sales at `to`; the ones still waiting for a lock get `grace` to finish
	// (so a lock is not abandoned mid-sale), then their context ends.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(to.Add(w.grace))):
		cancel()
		<-done
	case <-ctx.Done():
		<-done
	}

	out := cellStats{errors: map[string]int{}, elapsed: to.Sub(from)}
	if instances > 1 {
		out.byInstance = make([][]time.Duration, instances)
	}
	for b, st := range stats {
		out.perBuyer = append(out.perBuyer, st.sold)
		out.latencies = append(out.latencies, st.lats...)
		if instances > 1 {
			out.byInstance[b%instances] = append(out.byInstance[b%instances], st.lats...)
		}
		for k, n := range st.errs {
			out.errors[k] += n
		}
		out.longest = max(out.longest, st.longest)
	}
	return out
}

// buyerStats is what one buyer of a cell saw inside the window.
type buyerStats struct {
	sold    int
	lats    []time.Duration
	errs    map[string]int
	longest time.Duration
}

// buy is buyer b's loop: it calls sale until to (resting pause before each attempt), keeping what
// ends between from and to.
func (st *buyerStats) buy(ctx context.Context, b int, from, to time.Time, pause time.Duration, sale saleFunc) {
	st.errs = map[string]int{}
	st.lats = make([]time.Duration, 0, 1024)
	lastSale := from
	for {
		if pause > 0 {
			rest(ctx, pause)
		}
		t0 := time.Now()
		if !t0.Before(to) || ctx.Err() != nil {
			break
		}
		err := sale(ctx, b)
		t1 := time.Now()
		if t1.Before(from) {
			continue
		}
		if t1.After(to) {
			// Still waiting when the window closed: counted at the time waited so far.
			st.lats = append(st.lats, to.Sub(t0))
			continue
		}
		st.lats = append(st.lats, t1.Sub(t0))
		if err != nil {
			st.errs[errorKind(err)]++
			continue
		}
		st.sold++
		st.longest = max(st.longest, t1.Sub(lastSale))
		lastSale = t1
	}
	// A buyer that never sold, or not for a long time before the end, waited that long.
	st.longest = max(st.longest, to.Sub(lastSale))
}

// rest sleeps d, or until ctx ends.
func rest(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// merge adds the stats of another round of the same cell (buyer i of each round counts as the
// same buyer; the longest gap is the longest of any round).
func (c *cellStats) merge(o cellStats) {
	if c.errors == nil {
		c.errors = map[string]int{}
	}
	for i, n := range o.perBuyer {
		if i < len(c.perBuyer) {
			c.perBuyer[i] += n
		} else {
			c.perBuyer = append(c.perBuyer, n)
		}
	}
	c.latencies = append(c.latencies, o.latencies...)
	for i, l := range o.byInstance {
		if i < len(c.byInstance) {
			c.byInstance[i] = append(c.byInstance[i], l...)
		} else {
			c.byInstance = append(c.byInstance, l)
		}
	}
	for k, n := range o.errors {
		c.errors[k] += n
	}
	c.elapsed += o.elapsed
	c.longest = max(c.longest, o.longest)
}

// errorKind names a failed sale for the table.
func errorKind(err error) string {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	case errors.Is(err, service.ErrLockTimeout), errors.Is(err, lock.ErrNotObtained), errors.Is(err, errRefTimeout):
		return "lock-timeout"
	case errors.Is(err, errHTTPSale):
		return "http-not-sold"
	case errors.Is(err, service.ErrSoldOut):
		return "sold-out"
	case errors.Is(err, service.ErrUnavailable), errors.Is(err, lock.ErrUnavailable):
		return "unavailable"
	default:
		return "other"
	}
}

// percentile returns the p-quantile (0..1) of sorted by the nearest-rank method; 0 when empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// jain is Jain's fairness index of xs: (Σx)² / (n·Σx²); 1 when every buyer sold as much, 1/n
// when one buyer sold everything. With no sales at all it is 0 (nothing was shared).
func jain(xs []int) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
