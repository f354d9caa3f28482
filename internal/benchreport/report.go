// Package benchreport is a bench run as it is kept and drawn: the report seckill bench writes
// (its cells, targets, machine and Redis), where it keeps the last one, and the page that draws
// it. The dashboard's /bench page reads it without the bench itself.
package benchreport

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Report is one bench run.
type Report struct {
	Started     time.Time `json:"started"`
	ElapsedMs   int64     `json:"elapsedMs"`
	Machine     Machine   `json:"machine"`
	Concurrency []int     `json:"concurrency"`
	DurationMs  int64     `json:"durationMs"`
	WarmupMs    int64     `json:"warmupMs"`
	Rounds      int       `json:"rounds"`
	LeaseMs     int64     `json:"leaseMs"`
	Redis       struct {
		Kind    string   `json:"kind"`
		Version string   `json:"version"`
		Addrs   []string `json:"addrs"`
		RTT     RTT      `json:"rtt"`
	} `json:"redis"`
	// WaitQuantileP are the probabilities each cell's WaitQuantilesMs are read at.
	WaitQuantileP []float64 `json:"waitQuantileP"`
	Cells         []Cell    `json:"cells"`
	Targets       []Target  `json:"targets"`
}

// WaitQuantileP are the probabilities a cell's wait distribution is kept at (WaitQuantilesMs):
// every percent, then 99.5 %, 99.9 % and the longest wait; enough to draw its CDF.
var WaitQuantileP = func() []float64 {
	var ps []float64
	for i := range 100 {
		ps = append(ps, float64(i)/100)
	}
	return append(ps, 0.995, 0.999, 1)
}()

// Cell is one strategy at one crowd size.
type Cell struct {
	Strategy string `json:"strategy"`
	Kind     string `json:"kind"`
	Locked   bool   `json:"locked"`
	Buyers   int    `json:"buyers"`
	// Instances is how many service instances the buyers were spread over (buyer b on instance
	// b mod n), each with its own clients, lock registry and subscriptions.
	Instances int     `json:"instances"`
	Sales     int     `json:"sales"`
	Rate      float64 `json:"salesPerSec"`
	// P50Ms, P99Ms and MaxMs are over every attempt in the window (cellStats.latencies): failed
	// ones at their full duration, unfinished ones at the time waited when the window closed.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	Jain  float64 `json:"jain"`
	// Starved counts buyers that sold nothing in the window.
	Starved int `json:"starved"`
	// LongestGapMs is the longest any buyer went without a sale inside the window.
	LongestGapMs float64        `json:"longestGapMs"`
	Errors       map[string]int `json:"errors,omitempty"`
	// LostUpdates and Oversold come from the store's audit (orders recorded against the stock
	// decrement), independent of what the buyers were told.
	LostUpdates int64 `json:"lostUpdates"`
	Oversold    int64 `json:"oversold"`
	RoundTrips  int   `json:"roundTrips"`
	// SerialBound is 1 / (RoundTrips × RTT): the most sales per second any lock with that many
	// round trips in its critical section can make on one key. OfBound = Rate / SerialBound.
	SerialBound float64 `json:"serialBound"`
	OfBound     float64 `json:"ofBound"`
	// CommandsPerSale is every command the bench's clients sent to the four servers during the
	// cell (warm-up and drain included) per unit sold, counted by a go-redis hook on those
	// clients (see commandCounter): a script call counts once, a pipeline or transaction
	// counts each command in it, go-redis's connection setup is left out. Polling and herds show here as extra commands. It is counted
	// the same way on redis-server and on miniredis.
	CommandsPerSale float64 `json:"commandsPerSale"`
	// ClientCPUPerSaleUs and RedisCPUPerSaleUs are the CPU time this process and the four
	// servers used per unit sold during the cell; BusyPct is both together against every CPU of
	// the machine for the cell's wall time (near 100: the cell was CPU-bound, and whatever else
	// runs on the machine competes with it).
	ClientCPUPerSaleUs float64 `json:"clientCpuPerSaleUs"`
	RedisCPUPerSaleUs  float64 `json:"redisCpuPerSaleUs"`
	// RedisCPUUnknown: the servers did not report their CPU (INFO cpu; in-process miniredis
	// servers do not, and their CPU is part of ClientCPUPerSaleUs), so RedisCPUPerSaleUs is not
	// a measurement.
	RedisCPUUnknown bool    `json:"redisCpuUnknown,omitempty"`
	BusyPct         float64 `json:"busyPct"`
	// InstanceP50Ms is the median wait (every attempt) on each service instance, when the
	// buyers were spread over several (buyer b on instance b mod n).
	InstanceP50Ms []float64 `json:"instanceP50Ms,omitempty"`
	// InstanceNames name the instances of InstanceP50Ms over HTTP (RunHTTP), where the median
	// is the lock wait each instance reported (waitMs) for the sales it answered.
	InstanceNames []string `json:"instanceNames,omitempty"`
	// WaitQuantilesMs is the wait distribution of every attempt (as P50Ms) at the probabilities
	// of WaitQuantileP, by the nearest-rank method; empty when no attempt was measured.
	WaitQuantilesMs []float64 `json:"waitQuantilesMs,omitempty"`
	// SalesPerBuyer is what each buyer sold in the window (buyer b on instance b mod n).
	SalesPerBuyer []int `json:"salesPerBuyer,omitempty"`
}

// RTT is the measured round-trip time of one PING from this process (client work included).
type RTT struct {
	Median  time.Duration `json:"medianNs"`
	P99     time.Duration `json:"p99Ns"`
	Samples int           `json:"samples"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Go     string `json:"go"`
	Kernel string `json:"kernel,omitempty"`
}

// Target is one performance target: a ratio of two figures of this run against its limit.
type Target struct {
	Name string `json:"name"`
	// Want is the condition, e.g. "≥ 0.9".
	Want  string  `json:"want"`
	Ratio float64 `json:"ratio"`
	// Figures shows what the ratio was computed from.
	Figures string `json:"figures"`
	Pass    bool   `json:"pass"`
}

// WriteTargets writes ts, one line each: PASS or FAIL, the target, its ratio, what it wants and
// the figures it came from.
func WriteTargets(w io.Writer, ts []Target) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range ts {
		verdict := "PASS"
		if !t.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\tratio %.3f\twant %s\t(%s)\n", verdict, t.Name, t.Ratio, t.Want, t.Figures)
	}
	return tw.Flush()
}

// WriteJSON writes rep as indented JSON (seckill bench --json, KeepLastRun).
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
