package lab

import (
	"context"
	"sort"
	"sync"
	"time"

	"seckill/internal/modes"
	"seckill/service"
)

// MaxBurst bounds the number of concurrent sales of one burst.
const MaxBurst = 2000

// BurstResult is what a burst of concurrent sales through the real service did.
type BurstResult struct {
	Lock       string         `json:"lock"`
	N          int            `json:"n"`
	WorkMs     int64          `json:"workMs"`
	DurationMs float64        `json:"durationMs"`
	Outcomes   map[string]int `json:"outcomes"`
	// Timeline counts the answers by time since the burst started, in buckets of BucketMs.
	BucketMs int64    `json:"bucketMs"`
	Timeline []Bucket `json:"timeline"`
	// SalesPerSecond is the rate of successful sales over the whole burst.
	SalesPerSecond float64 `json:"salesPerSecond"`
}

// Bucket is one slice of a burst's timeline.
type Bucket struct {
	AtMs   int64 `json:"atMs"`
	Sold   int   `json:"sold"`
	Failed int   `json:"failed"` // every answer that was not a sale (sold out included)
}

// Seller is what a burst needs of the service (a *service.Service).
type Seller interface {
	Sale(ctx context.Context, req service.SaleRequest) (service.SaleResult, error)
	Settings() service.Settings
}

// Burst fires n concurrent sales of req, each with the business time work, through svc (its own
// SKU and settings) and reports the answers and when they came. n is clamped to 1..MaxBurst.
func Burst(ctx context.Context, svc Seller, n int, req service.SaleRequest, work time.Duration) BurstResult {
	ctx = modes.WithFaults(ctx, modes.Faults{Work: work})
	n = min(max(n, 1), MaxBurst)
	type answer struct {
		kind string
		at   time.Duration
	}
	answers := make([]answer, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := svc.Sale(ctx, req)
			answers[i] = answer{kind: kindOf(res, err), at: time.Since(start)}
		})
	}
	wg.Wait()
	took := time.Since(start)
	mode := req.Mode
	if mode == "" {
		mode = svc.Settings().Mode
	}
	out := BurstResult{Lock: mode, N: n, WorkMs: work.Milliseconds(), Outcomes: map[string]int{},
		DurationMs: float64(took.Microseconds()) / 1000}
	// About 40 buckets, at least 5ms wide, so the chart has a readable shape at any speed.
	bucket := max(5*time.Millisecond, (took / 40).Round(time.Millisecond))
	out.BucketMs = bucket.Milliseconds()
	sort.Slice(answers, func(i, j int) bool { return answers[i].at < answers[j].at })
	for _, a := range answers {
		out.Outcomes[a.kind]++
		idx := int(a.at / bucket)
		for len(out.Timeline) <= idx {
			out.Timeline = append(out.Timeline, Bucket{AtMs: int64(len(out.Timeline)) * out.BucketMs})
		}
		if a.kind == "sold" {
			out.Timeline[idx].Sold++
		} else {
			out.Timeline[idx].Failed++
		}
	}
	if took > 0 {
		out.SalesPerSecond = float64(out.Outcomes["sold"]) / took.Seconds()
	}
	return out
}
