package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lock"

	"seckill/internal/redisproc"
)

// Primitive is one line of `bench --primitives` (issue 45): one of the library's other primitives
// on one key of one Redis, PrimInstances instances (each with its own client and its own
// read-write lock or semaphore, as a separate process would have) × PrimBuyers buyers in a closed
// loop (readwrite-rest's rest ReaderRest before each read), shaped as --client-cost is. Every
// buyer's hold does one round trip (a GET), and every hold is checked while it holds.
type Primitive struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"`
	Buyers    int    `json:"buyersPerInstance"`
	Permits   int    `json:"permits,omitempty"` // a semaphore's permits; 0 for the read-write lock
	// Ops are the reads, or the permits taken, that ended inside the windows.
	Ops    int     `json:"ops"`
	PerSec float64 `json:"opsPerSec"`
	// P99Ms and MaxMs are over every attempt: its wait, its hold and its release.
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	Jain  float64 `json:"jain"`
	// MaxInside is the most holds seen at once: readers, or permits.
	MaxInside int64 `json:"maxInside"`
	// Writes and WriterMaxMs are the read-write lock's writer's: writes that ended inside the
	// windows, and its longest attempt.
	Writes      int     `json:"writes,omitempty"`
	WriterMaxMs float64 `json:"writerMaxMs,omitempty"`
	// Errors are failed attempts by kind, the writer's as "writer-<kind>".
	Errors map[string]int `json:"errors,omitempty"`
	// Violations are holds that found one they exclude inside, or more holders than permits.
	Violations int64 `json:"violations"`
}

// The shape of `bench --primitives`: 16 instances × 4 buyers, as --client-cost.
const (
	PrimInstances = CostLockers
	PrimBuyers    = CostBuyers
	// PrimPermits are the permits the semaphores' buyers share.
	PrimPermits = 4
	// WriterPause is how long the read-write lock's one writer rests before each write.
	WriterPause = 10 * time.Millisecond
	// ReaderRest is how long the readers of the readwrite-rest line rest before each read: long
	// enough for the reads to leave the writer gaps, which a closed loop of readers does not.
	ReaderRest = 10 * time.Millisecond
)

// ErrViolation: a hold of `bench --primitives` overlapped one it excludes, or the permits.
var ErrViolation = errors.New("bench: a hold overlapped one it excludes")

// roundFunc runs one round of a line on the instances' clients.
type roundFunc func(ctx context.Context, clients []*redis.Client, w timing, o Options) (primRound, error)

// primLines are the lines of --primitives, in the order they print.
var primLines = []struct {
	name    string
	permits int
	round   roundFunc
}{
	{"readwrite", 0, rwRound(0)},
	{"readwrite-rest", 0, rwRound(ReaderRest)},
	{"semaphore", PrimPermits, semRound(false)},
	{"expirable", PrimPermits, semRound(true)},
}

// RunPrimitives measures every line on a Redis of its own (redis-server when installed, unless
// opt.Embedded): opt.Rounds rounds, each a window of opt.Duration / opt.Rounds per line after
// opt.Warmup, the lines alternated within a round. Each line sums its windows, as Run's cells do.
func RunPrimitives(ctx context.Context, opt Options) ([]Primitive, error) {
	opt.defaults()
	srv, err := redisproc.Start(redisproc.Options{Embedded: opt.Embedded})
	if err != nil {
		return nil, fmt.Errorf("bench: primitives: %w", err)
	}
	defer srv.Close()
	// Each instance's buyers, its writer, and its watchdogs' renewals.
	clients, closeClients := openClients(srv.Addr, PrimInstances, PrimBuyers+4, nil)
	defer closeClients()
	w := timing{warmup: opt.Warmup, dur: opt.Duration / time.Duration(opt.Rounds), grace: grace}
	acc := make([]primRound, len(primLines))
	for range opt.Rounds {
		for i, l := range primLines {
			r, err := l.round(ctx, clients, w, opt)
			if err != nil {
				return nil, fmt.Errorf("bench: primitives: %s: %w", l.name, err)
			}
			acc[i].merge(r)
		}
	}
	out := make([]Primitive, len(primLines))
	for i, l := range primLines {
		out[i] = acc[i].primitive(l.name, l.permits)
	}
	return out, nil
}

// Violations is ErrViolation, naming the lines, when a line saw one.
func Violations(ps []Primitive) error {
	var bad []string
	for _, p := range ps {
		if p.Violations > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d", p.Name, p.Violations))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrViolation, bad)
}

// taker takes one hold and returns what gives it back.
type taker func(ctx context.Context) (release func(context.Context) error, err error)

// section is where the holders of one kind are while they hold. A hold is a violation when it
// makes more than limit holders (0: no limit), or finds a holder it excludes inside. Of two holds
// that overlap, the later to count itself in sees the other: the counts are atomics, which Go
// keeps sequentially consistent.
type section struct {
	now, peak atomic.Int64
	limit     int64
	excludes  *section
	bad       *atomic.Int64
}

// hold takes a hold, counts itself in while work runs, and gives it back (after counting itself
// out, and even when ctx has ended).
func (s *section) hold(ctx context.Context, take taker, work func(context.Context) error) error {
	release, err := take(ctx)
	if err != nil {
		return err
	}
	n := s.now.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	if (s.limit > 0 && n > s.limit) || (s.excludes != nil && s.excludes.now.Load() > 0) {
		s.bad.Add(1)
	}
	err = work(ctx)
	s.now.Add(-1)
	if rerr := release(context.WithoutCancel(ctx)); rerr != nil {
		err = errors.Join(err, fmt.Errorf("release: %w", rerr))
	}
	return err
}

// lockTaker takes l's lock on key, waiting up to wait.
func lockTaker(l *lock.Locker, key string, wait time.Duration) taker {
	return func(ctx context.Context) (func(context.Context) error, error) {
		le, err := l.Acquire(ctx, key, lock.Options{Wait: wait})
		if err != nil {
			return nil, err
		}
		return le.Release, nil
	}
}

// rwRound is one round of the read-write lock: every instance's buyers read under its read side
// (a GET of a version, which must be even), resting rest before each read, while one writer on
// instance 0 writes under its write side (the version made odd, then even again).
func rwRound(rest time.Duration) roundFunc {
	return func(ctx context.Context, clients []*redis.Client, w timing, o Options) (primRound, error) {
		w.pause = rest
		key := "bench:rw:" + uuid.NewString()
		version := key + ":version"
		n := len(clients)
		reads := make([]taker, n)
		var writeTake taker // instance 0's
		for i, c := range clients {
			r, wr, err := lock.NewReadWrite(c, o.lockOptions()...)
			if err != nil {
				return primRound{}, err
			}
			defer r.Close()
			defer wr.Close()
			reads[i] = lockTaker(r, key, o.Wait)
			if i == 0 {
				writeTake = lockTaker(wr, key, o.Wait)
			}
		}
		var bad atomic.Int64
		readers := &section{bad: &bad}
		writers := &section{limit: 1, excludes: readers, bad: &bad}
		readers.excludes = writers
		read := func(ctx context.Context, b int) error {
			return readers.hold(ctx, reads[b%n], func(ctx context.Context) error {
				v, err := clients[b%n].Get(ctx, version).Int64()
				if errors.Is(err, redis.Nil) {
					return nil
				}
				if err == nil && v%2 != 0 {
					bad.Add(1) // a writer is inside, as Redis sees it
				}
				return err
			})
		}
		write := func(ctx context.Context, _ int) error {
			return writers.hold(ctx, writeTake, func(ctx context.Context) error {
				if err := clients[0].Incr(ctx, version).Err(); err != nil {
					return err
				}
				// Even again, whatever ctx says: an odd version left behind would fail every reader.
				return clients[0].Incr(context.WithoutCancel(ctx), version).Err()
			})
		}
		return runPrim(ctx, w, n, read, write, readers), nil
	}
}

// permitSetter is what both semaphores share here.
type permitSetter interface {
	TrySetPermits(ctx context.Context, name string, n int) (bool, error)
	Close() error
}

// semRound is one round of a semaphore (the expirable one, its permits renewed by a watchdog):
// every instance's buyers share PrimPermits permits, each holding one for a GET.
func semRound(expirable bool) roundFunc {
	return func(ctx context.Context, clients []*redis.Client, w timing, o Options) (primRound, error) {
		name := "bench:sem:" + uuid.NewString()
		n := len(clients)
		sems, takes := make([]permitSetter, n), make([]taker, n)
		for i, c := range clients {
			s, take, err := newSem(c, name, o, expirable)
			if err != nil {
				return primRound{}, err
			}
			defer s.Close()
			sems[i], takes[i] = s, take
		}
		if ok, err := sems[0].TrySetPermits(ctx, name, PrimPermits); err != nil {
			return primRound{}, fmt.Errorf("set the permits of %s: %w", name, err)
		} else if !ok {
			return primRound{}, fmt.Errorf("%s had its permits set already", name)
		}
		var bad atomic.Int64
		in := &section{limit: PrimPermits, bad: &bad}
		buy := func(ctx context.Context, b int) error {
			return in.hold(ctx, takes[b%n], func(ctx context.Context) error {
				return clients[b%n].Get(ctx, name).Err()
			})
		}
		return runPrim(ctx, w, n, buy, nil, in), nil
	}
}

// newSem builds one instance's semaphore on c, and its taker of one permit of name.
func newSem(c *redis.Client, name string, o Options, expirable bool) (permitSetter, taker, error) {
	if expirable {
		s, err := lock.NewExpirableSemaphore(c, o.lockOptions()...)
		if err != nil {
			return nil, nil, err
		}
		return s, func(ctx context.Context) (func(context.Context) error, error) {
			p, err := s.Acquire(ctx, name, o.Wait, 0)
			if err != nil {
				return nil, err
			}
			return p.Release, nil
		}, nil
	}
	s, err := lock.NewSemaphore(c, lock.WithLogger(o.Log))
	if err != nil {
		return nil, nil, err
	}
	return s, func(ctx context.Context) (func(context.Context) error, error) {
		if err := s.Acquire(ctx, name, 1, o.Wait); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return s.Release(ctx, name, 1) }, nil
	}, nil
}

// primRound is what a line's rounds saw: its buyers, its writer (none but the read-write lock's),
// the most holders at once and the violations.
type primRound struct {
	buyers, writer cellStats
	inside, bad    int64
}

// runPrim runs one round: the buyers (buyer b on instance b mod n, resting w.pause before each
// attempt) and, when write is set, one writer resting WriterPause before each write, in windows of
// the same length.
func runPrim(ctx context.Context, w timing, n int, buy, write saleFunc, s *section) primRound {
	var r primRound
	var wg sync.WaitGroup
	if write != nil {
		ww := w
		ww.pause = WriterPause
		wg.Go(func() { r.writer = runCell(ctx, 1, 1, ww, write) })
	}
	r.buyers = runCell(ctx, n*PrimBuyers, n, w, buy)
	wg.Wait()
	r.inside, r.bad = s.peak.Load(), s.bad.Load()
	return r
}

// merge adds another round of the same line.
func (r *primRound) merge(o primRound) {
	r.buyers.merge(o.buyers)
	r.writer.merge(o.writer)
	r.inside = max(r.inside, o.inside)
	r.bad += o.bad
}

// primitive is the line's figures.
func (r primRound) primitive(name string, permits int) Primitive {
	lat, wlat := slices.Sorted(slices.Values(r.buyers.latencies)), slices.Sorted(slices.Values(r.writer.latencies))
	p := Primitive{Name: name, Instances: PrimInstances, Buyers: PrimBuyers, Permits: permits,
		P99Ms: msf(percentile(lat, 0.99)), MaxMs: msf(percentile(lat, 1)), Jain: jain(r.buyers.perBuyer),
		MaxInside: r.inside, WriterMaxMs: msf(percentile(wlat, 1)), Violations: r.bad}
	for _, n := range r.buyers.perBuyer {
		p.Ops += n
	}
	if r.buyers.elapsed > 0 {
		p.PerSec = float64(p.Ops) / r.buyers.elapsed.Seconds()
	}
	for _, n := range r.writer.perBuyer {
		p.Writes += n
	}
	errs := map[string]int{}
	for k, n := range r.buyers.errors {
		errs[k] += n
	}
	for k, n := range r.writer.errors {
		errs["writer-"+k] += n
	}
	if len(errs) > 0 {
		p.Errors = errs
	}
	return p
}

// WritePrimitives prints the lines of a RunPrimitives run with opt as a table.
func WritePrimitives(w io.Writer, ps []Primitive, opt Options) error {
	opt.defaults()
	fmt.Fprintf(w, "primitives: %d instances × %d buyers on one key of one Redis, %d rounds of %s per line, each after %s of warm-up\n\n",
		PrimInstances, PrimBuyers, opt.Rounds, opt.Duration/time.Duration(opt.Rounds), opt.Warmup)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "line\tpermits\tops/s\tp99 ms\tmax ms\tJain\tmost inside\twrites\twriter max ms\tviolations\terrors\t")
	for _, p := range ps {
		permits, writes, writer := "-", "-", "-"
		if p.Permits > 0 {
			permits = strconv.Itoa(p.Permits)
		} else {
			writes, writer = strconv.Itoa(p.Writes), fmt.Sprintf("%.1f", p.WriterMaxMs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.1f\t%.4f\t%d\t%s\t%s\t%d\t%s\t\n", p.Name, permits, p.PerSec, p.P99Ms, p.MaxMs,
			p.Jain, p.MaxInside, writes, writer, p.Violations, errorsText(p.Errors))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nreadwrite: readers in a closed loop; readwrite-rest: each reader rests %s before each read; the one writer\n", ReaderRest)
	fmt.Fprintf(w, "rests %s before each write; ops/s = reads, or permits taken, per second; p99/max = an attempt: its wait,\n", WriterPause)
	fmt.Fprintln(w, "its hold (one GET) and its release; most inside = the most readers or permits held at once;")
	fmt.Fprintln(w, "violations = holds that found one they exclude inside (a writer, a reader) or more holders than permits.")
	return nil
}
