// Package store is the one type that reads and writes the inventory data in Redis: the stock key
// (inventory001, a plain string, as in the classic flash-sale demo) and its companions, which all share the
// stock key's hash slot through the {inventory001} hash tag so every script stays single-slot.
package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors, checked with errors.Is.
var (
	// ErrUnavailable: the data Redis did not answer.
	ErrUnavailable = errors.New("store: redis unavailable")
	// ErrCorrupt: the stock key holds something that is not an integer.
	ErrCorrupt = errors.New("store: stock value is not an integer")
	// ErrNoStock: the stock key does not exist (the data Redis lost it, or it was deleted).
	ErrNoStock = errors.New("store: stock key does not exist")
)

// Keys names every key of one SKU.
type Keys struct {
	Stock      string // the stock itself: "inventory001"
	Orders     string // list of recorded orders; its length is "sold"
	Initial    string // the stock put in by the last reset
	ByInstance string // hash: instance -> orders it recorded
	Fence      string // newest fencing token of the fenced mode's counter whose read or write was accepted (FenceOf)
	Stale      string // count of stale writes rejected by the fence
	Foreign    string // count of foreign unlocks observed
	InSection  string // buyers inside the critical section right now
	Overlaps   string // times a buyer entered while another was inside
	LockPrefix string // every single-instance lock key of this SKU starts with it
	// Epoch counts the restocks and resets of the stock: a sale's write carries the epoch its read
	// saw and writes nothing once it has moved, so no sale under way can undo a restock.
	Epoch string
	// Checkout starts the name of the SKU's checkout semaphore (CheckoutOf); a reset keeps it.
	Checkout string
}

// KeysFor returns the keys of sku.
func KeysFor(sku string) Keys {
	tag := "{" + sku + "}:"
	return Keys{
		Stock: sku, Orders: tag + "orders", Initial: tag + "initial", ByInstance: tag + "byInstance",
		Fence: tag + "fence", Stale: tag + "stale", Foreign: tag + "foreignUnlocks",
		InSection: tag + "inSection", Overlaps: tag + "overlaps", LockPrefix: tag + "lock:",
		Epoch: tag + "epoch", Checkout: tag + "checkout:",
	}
}

// CheckoutOf names the checkout semaphore of limit permits. The limit is part of the name: the
// semaphore's count is set once, so a new limit starts a semaphore of its own.
func (k Keys) CheckoutOf(limit int) string { return k.Checkout + strconv.Itoa(limit) }

// The token counters a sale's fencing token may come from. Each has a fence of its own
// (Keys.FenceOf): tokens drawn from two counters are not comparable, and one fence over both let
// one counter's high tokens refuse every write of the other (3,000 sold-out fenced requests made
// the next redlock-fenced sales answer 409 with stock left).
const (
	// CounterFenced: mode fenced in its line layout, <lock key>:token on the data Redis (Keys.Fence).
	CounterFenced = ""
	// CounterRFenced: mode fenced in Redisson RFencedLock's layout, Redisson's counter beside the
	// lock (the library names it: Locker.Keys).
	CounterRFenced = "fenced-redisson"
	// CounterRedlock: mode redlock-fenced, a counter on the independent masters.
	CounterRedlock = "redlock-fenced"
)

// Counters lists every token counter, CounterFenced first.
var Counters = []string{CounterFenced, CounterRFenced, CounterRedlock}

// FenceOf is the fence of the tokens drawn from counter: the newest token of that counter whose
// read or write was accepted.
func (k Keys) FenceOf(counter string) string {
	if counter == CounterFenced {
		return k.Fence
	}
	return k.Fence + ":" + counter
}

// LockKey is the lock key that mode uses for sku.
func LockKey(sku, mode string) string { return KeysFor(sku).LockPrefix + mode }

var (
	//go:embed lua/commit.lua
	commitLua string
	//go:embed lua/fenced_read.lua
	fencedReadLua string
	//go:embed lua/atomic_sale.lua
	atomicSaleLua string
	//go:embed lua/reset.lua
	resetLua string
	//go:embed lua/enter_section.lua
	enterSectionLua string
	//go:embed lua/ensure_stock.lua
	ensureStockLua string
	//go:embed lua/restock.lua
	restockLua string

	commitScript       = redis.NewScript(commitLua)
	fencedReadScript   = redis.NewScript(fencedReadLua)
	atomicSaleScript   = redis.NewScript(atomicSaleLua)
	resetScript        = redis.NewScript(resetLua)
	enterSectionScript = redis.NewScript(enterSectionLua)
	ensureStockScript  = redis.NewScript(ensureStockLua)
	restockScript      = redis.NewScript(restockLua)
)

// AtomicSaleSource is the sale script of mode atomic as the service sends it, for the simulator
// (seckill simulate), which runs the same text.
func AtomicSaleSource() string { return atomicSaleLua }

// Store reads and writes the inventory on the data Redis.
type Store struct {
	rdb redis.UniversalClient
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// FenceToken is the newest fencing token of counter whose read or write was accepted for sku (0:
// none yet).
func (s *Store) FenceToken(ctx context.Context, sku, counter string) (int64, error) {
	fence := KeysFor(sku).FenceOf(counter)
	raw, err := s.rdb.Get(ctx, fence).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		return 0, wrap("GET "+fence, err)
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s holds %q, not a token", ErrCorrupt, fence, truncate(raw, 40))
	}
	return n, nil
}

// wrap classifies a Redis error: reply errors stay internal, everything else is ErrUnavailable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var reply redis.Error
	if errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) && !refusesService(reply) {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	// Everything else (refused, timed out, cancelled, closed, a Redis that will not serve us)
	// means Redis is unavailable.
	return fmt.Errorf("store: %s: %w: %w", op, ErrUnavailable, err)
}

// refusesService reports whether a Redis reply refuses to serve at all (a wrong or missing
// password, a server still loading its data, no master): the server is unavailable, not the
// command wrong.
func refusesService(reply redis.Error) bool {
	for _, p := range []string{"WRONGPASS", "NOAUTH", "LOADING", "MASTERDOWN", "READONLY", "CLUSTERDOWN"} {
		if strings.HasPrefix(reply.Error(), p) {
			return true
		}
	}
	return false
}

// Stock reads the stock of sku. A missing or non-integer value is ErrCorrupt naming the key.
func (s *Store) Stock(ctx context.Context, sku string) (int64, error) {
	v, err := s.rdb.Get(ctx, sku).Result()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("%w: %s", ErrNoStock, sku)
	}
	if err != nil {
		return 0, wrap("GET "+sku, err)
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("%w: key %s holds %q", ErrCorrupt, sku, truncate(v, 40))
	}
	return n, nil
}

// Reading is what a sale read of the stock.
type Reading struct {
	Stock int64
	// Epoch is the stock's epoch at the read: its counter + 1, where the counter starts from the
	// Redis server's clock in ms when the stock is created, restocked or reset without one, and
	// moves by one at each restock or reset (a counter lost with the data never comes back to an
	// old value). The write that carries it (Order.Epoch) is refused once a restock has moved it.
	Epoch int64
	// Stale: a newer fencing token already read or wrote, and nothing was read; Newest is then
	// that token (else the reader's own token, 0 without one).
	Stale  bool
	Newest int64
}

// epochOf reads the stored epoch counter: absent is 0, read as epoch 1 (Reading.Epoch is never 0,
// which Order.Epoch keeps for "unchecked").
func epochOf(raw any, key string) (int64, error) {
	switch v := raw.(type) {
	case nil:
		return 1, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: key %s holds %q", ErrCorrupt, key, truncate(v, 40))
		}
		return n + 1, nil
	case int64:
		return v + 1, nil
	}
	return 0, fmt.Errorf("%w: key %s: unexpected reply %T", ErrCorrupt, key, raw)
}

// ReadStock reads the stock of sku and its epoch for a sale, in one step. With a fencing token (>
// 0) the read registers the token as the newest, so a holder with an older token can no longer
// write after this read: fencing the read as well as the write is what stops an expired holder's
// write landing between a newer holder's read and its write (a lost update the write's check
// alone lets through). Reading.Stale is true, and nothing is read, when a newer token of the same
// counter (Counters) already read or wrote.
func (s *Store) ReadStock(ctx context.Context, sku string, token int64, counter string) (Reading, error) {
	k := KeysFor(sku)
	if token <= 0 {
		r, err := s.rdb.MGet(ctx, k.Stock, k.Epoch).Result()
		if err != nil {
			return Reading{}, wrap("MGET "+k.Stock+" "+k.Epoch, err)
		}
		if len(r) != 2 {
			return Reading{}, fmt.Errorf("store: read of %s: unexpected reply %v", sku, r)
		}
		if r[0] == nil {
			return Reading{}, fmt.Errorf("%w: %s", ErrNoStock, sku)
		}
		return reading(sku, r[0], r[1], 0)
	}
	r, err := fencedReadScript.Run(ctx, s.rdb, []string{k.Stock, k.FenceOf(counter), k.Stale, k.Epoch}, token).Slice()
	if err != nil {
		return Reading{}, wrap("fenced read", err)
	}
	if len(r) != 4 {
		return Reading{}, fmt.Errorf("store: fenced read of %s: unexpected reply %v", sku, r)
	}
	if ok, _ := r[0].(int64); ok == 0 {
		newest, _ := r[1].(int64)
		return Reading{Stale: true, Newest: newest}, nil
	}
	if exists, _ := r[2].(int64); exists == 0 {
		return Reading{}, fmt.Errorf("%w: %s", ErrNoStock, sku)
	}
	return reading(sku, r[1], r[3], token)
}

// reading parses a stock value and an epoch counter as Redis gave them.
func reading(sku string, stock, epoch any, token int64) (Reading, error) {
	v, _ := stock.(string)
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return Reading{}, fmt.Errorf("%w: key %s holds %q", ErrCorrupt, sku, truncate(v, 40))
	}
	e, err := epochOf(epoch, KeysFor(sku).Epoch)
	if err != nil {
		return Reading{}, err
	}
	return Reading{Stock: n, Epoch: e, Newest: token}, nil
}

// StockFenced is ReadStock of CounterFenced's tokens without the epoch (a write built from it is
// not checked against restocks): stale and newest as Reading's.
func (s *Store) StockFenced(ctx context.Context, sku string, token int64) (stock int64, stale bool, newest int64, err error) {
	r, err := s.ReadStock(ctx, sku, token, CounterFenced)
	return r.Stock, r.Stale, r.Newest, err
}

// Order is one sale to record.
type Order struct {
	ID       string
	Instance string
	Mode     string
	// Token is the fencing token the write carries; 0 writes unconditionally.
	Token int64
	// Counter is the counter Token was drawn from (Counters; "" = CounterFenced).
	Counter string
	// Epoch is the stock's epoch the sale read (Reading.Epoch): the write is refused, and writes
	// nothing, once a restock or a reset has moved it. 0 does not check it.
	Epoch int64
}

// CommitResult tells what Commit did.
type CommitResult struct {
	// Stale: the write carried a token older than one already written, and was rejected.
	Stale bool
	// NewestToken is the newest token accepted so far (when Stale, the one that beat ours).
	NewestToken int64
	// Restocked: the stock was restocked (or reset) after the sale read it, and nothing was
	// written: the sale's stock - 1 would have undone the restock.
	Restocked bool
}

// Commit writes newStock and records o in one script, so a sale is never half-written. It does
// not compare the stock with what was read: the read-check-write race is the lab's point, and
// only the lock protects it. With o.Token > 0 the write is accepted only if no newer token has
// been written (fencing); with o.Epoch > 0, only if no restock came after the read.
func (s *Store) Commit(ctx context.Context, sku string, newStock int64, o Order) (CommitResult, error) {
	keys, args := commitCall(sku, newStock, o)
	return commitResult(commitScript.Run(ctx, s.rdb, keys, args...).Int64Slice())
}

// commitCall is the commit script's keys and arguments.
func commitCall(sku string, newStock int64, o Order) ([]string, []any) {
	k := KeysFor(sku)
	return []string{k.Stock, k.Orders, k.ByInstance, k.FenceOf(o.Counter), k.Stale, k.Epoch},
		[]any{newStock, orderRecord(o), o.Instance, o.Token, o.Epoch}
}

// commitResult reads the commit script's reply.
func commitResult(res []int64, err error) (CommitResult, error) {
	if err != nil {
		return CommitResult{}, wrap("commit", err)
	}
	if len(res) != 2 {
		return CommitResult{}, fmt.Errorf("store: commit: unexpected reply %v", res)
	}
	return CommitResult{Stale: res[0] == 0, Restocked: res[0] == -1, NewestToken: res[1]}, nil
}

// Pipeline starts a pipeline on the store's Redis, for the commands of a sale sent together.
func (s *Store) Pipeline() redis.Pipeliner { return s.rdb.Pipeline() }

// CommitIn queues Commit on p, a pipeline of this store's Redis that the caller executes, and
// returns the reading of its result once p has run. The script goes in full (EVAL): EVALSHA in a
// pipeline cannot fall back when Redis does not know it yet, and a write that missed its place
// ahead of a lock's release must not be sent again after it.
func (s *Store) CommitIn(ctx context.Context, p redis.Pipeliner, sku string, newStock int64, o Order) func() (CommitResult, error) {
	keys, args := commitCall(sku, newStock, o)
	cmd := commitScript.Eval(ctx, p, keys, args...)
	return func() (CommitResult, error) { return commitResult(cmd.Int64Slice()) }
}

// AtomicSale decrements the stock only while it is above 0 and records the order, in one script.
// It returns the remaining stock and whether a unit was sold.
func (s *Store) AtomicSale(ctx context.Context, sku string, o Order) (remaining int64, sold bool, err error) {
	k := KeysFor(sku)
	res, err := atomicSaleScript.Run(ctx, s.rdb, []string{k.Stock, k.Orders, k.ByInstance},
		orderRecord(o), o.Instance).Int64Slice()
	if err != nil {
		var reply redis.Error
		if errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "NOSTOCK") {
			return 0, false, fmt.Errorf("%w: %s", ErrNoStock, sku)
		}
		if errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) && !refusesService(reply) {
			return 0, false, fmt.Errorf("%w: key %s: %w", ErrCorrupt, sku, err)
		}
		return 0, false, wrap("atomic sale", err)
	}
	return res[1], res[0] == 1, nil
}

func orderRecord(o Order) string {
	return fmt.Sprintf(`{"id":%q,"instance":%q,"lock":%q,"token":%d,"at":%d}`,
		o.ID, o.Instance, o.Mode, o.Token, time.Now().UnixMilli())
}

// Reset sets the stock of sku, records it as the initial stock and clears the orders, counters
// and every single-instance lock key of the SKU: those under its LockPrefix, and lockKeys (the
// keys the locks keep beside their lock keys, all in the SKU's hash slot). It moves the stock's
// epoch, as Restock does: no sale under way writes into the fresh stock.
func (s *Store) Reset(ctx context.Context, sku string, stock int64, lockKeys ...string) error {
	k := KeysFor(sku)
	keys := []string{k.Stock, k.Orders, k.Initial, k.Epoch, k.ByInstance, k.Stale, k.Foreign, k.InSection, k.Overlaps}
	for _, c := range Counters {
		keys = append(keys, k.FenceOf(c))
	}
	err := resetScript.Run(ctx, s.rdb, append(keys, lockKeys...), stock, k.LockPrefix).Err()
	return wrap("reset", err)
}

// EnsureStock creates the stock of a fresh SKU: one with no stock key, no initial stock and no
// orders. It never touches a SKU that has any of them, so a restart cannot reset a stock Redis
// still has, nor quietly put stock back under orders that remain (that is the operator's
// Restock). It reports whether it created the stock.
func (s *Store) EnsureStock(ctx context.Context, sku string, stock int64) (bool, error) {
	k := KeysFor(sku)
	n, err := ensureStockScript.Run(ctx, s.rdb, []string{k.Stock, k.Initial, k.Orders, k.Epoch}, stock).Int()
	if err != nil {
		return false, wrap("create stock "+k.Stock, err)
	}
	return n == 1, nil
}

// Restock sets the stock of sku and moves its initial stock by as much, keeping the orders and
// the lock keys: the audit's sold and lost updates stay what they were. It moves the stock's
// epoch in the same script, so no sale that read the stock before it can write after it.
func (s *Store) Restock(ctx context.Context, sku string, stock int64) error {
	k := KeysFor(sku)
	return wrap("restock "+k.Stock, restockScript.Run(ctx, s.rdb, []string{k.Stock, k.Initial, k.Orders, k.Epoch}, stock).Err())
}

// MissingStock lists the SKUs among skus whose stock key does not exist.
func (s *Store) MissingStock(ctx context.Context, skus []string) ([]string, error) {
	cmds := make([]*redis.IntCmd, len(skus))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sku := range skus {
			cmds[i] = p.Exists(ctx, KeysFor(sku).Stock)
		}
		return nil
	})
	if err != nil {
		return nil, wrap("EXISTS stock", err)
	}
	var missing []string
	for i, c := range cmds {
		if c.Val() == 0 {
			missing = append(missing, skus[i])
		}
	}
	return missing, nil
}

// PTTL is key's remaining time to live in ms on the data Redis: -1 without an expiry, -2 when
// the key does not exist.
func (s *Store) PTTL(ctx context.Context, key string) (int64, error) {
	v, err := s.rdb.Do(ctx, "PTTL", key).Int64()
	return v, wrap("PTTL "+key, err)
}

// Inventory is the audit view of one SKU.
type Inventory struct {
	SKU            string           `json:"sku"`
	Stock          int64            `json:"stock"`
	InitialStock   int64            `json:"initialStock"`
	Sold           int64            `json:"sold"`
	LostUpdates    int64            `json:"lostUpdates"`
	Oversold       int64            `json:"oversold"`
	StaleRejected  int64            `json:"staleWritesRejected"`
	ForeignUnlocks int64            `json:"foreignUnlocks"`
	Overlaps       int64            `json:"overlaps"`
	ByInstance     map[string]int64 `json:"soldByInstance"`
}

// Snapshot reads the audit view of sku in one transaction.
func (s *Store) Snapshot(ctx context.Context, sku string) (Inventory, error) {
	k := KeysFor(sku)
	var (
		stock, initial, stale, foreign, overlaps *redis.StringCmd
		sold                                     *redis.IntCmd
		by                                       *redis.MapStringStringCmd
	)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		stock = p.Get(ctx, k.Stock)
		initial = p.Get(ctx, k.Initial)
		sold = p.LLen(ctx, k.Orders)
		stale = p.Get(ctx, k.Stale)
		foreign = p.Get(ctx, k.Foreign)
		overlaps = p.Get(ctx, k.Overlaps)
		by = p.HGetAll(ctx, k.ByInstance)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Inventory{}, wrap("snapshot", err)
	}
	inv := Inventory{SKU: sku, Sold: sold.Val(), ByInstance: map[string]int64{}}
	for _, f := range []struct {
		cmd *redis.StringCmd
		dst *int64
		key string
	}{{stock, &inv.Stock, k.Stock}, {initial, &inv.InitialStock, k.Initial}, {stale, &inv.StaleRejected, k.Stale},
		{foreign, &inv.ForeignUnlocks, k.Foreign}, {overlaps, &inv.Overlaps, k.Overlaps}} {
		v, err := f.cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			return Inventory{}, fmt.Errorf("%w: key %s holds %q", ErrCorrupt, f.key, truncate(v, 40))
		}
		*f.dst = n
	}
	for inst, v := range by.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		inv.ByInstance[inst] = n
	}
	inv.LostUpdates = inv.Sold - (inv.InitialStock - inv.Stock)
	inv.Oversold = max(0, inv.Sold-inv.InitialStock)
	return inv, nil
}

// Observe counts a lab observation (foreign unlocks) for sku.
func (s *Store) CountForeignUnlock(ctx context.Context, sku string) error {
	return wrap("INCR foreign", s.rdb.Incr(ctx, KeysFor(sku).Foreign).Err())
}

// EnterSection marks buyer entering the critical section of sku and counts an overlap when
// another buyer is already inside: the lab's direct observation of mutual exclusion. within is
// how long the buyer's request may still run; a buyer that never leaves (a killed process) stops
// counting after it.
func (s *Store) EnterSection(ctx context.Context, sku, buyer string, within time.Duration) error {
	k := KeysFor(sku)
	err := enterSectionScript.Run(ctx, s.rdb, []string{k.InSection, k.Overlaps}, buyer, max(within.Milliseconds(), 1)).Err()
	return wrap("enter section", err)
}

// LeaveSection marks buyer leaving the critical section of sku. It is safe to call whether or
// not EnterSection got through.
func (s *Store) LeaveSection(ctx context.Context, sku, buyer string) error {
	return wrap("ZREM inSection", s.rdb.ZRem(ctx, KeysFor(sku).InSection, buyer).Err())
}

// LeaveSectionIn queues LeaveSection on p, a pipeline of this store's Redis that the caller
// executes, and returns the reading of its outcome once p has run.
func (s *Store) LeaveSectionIn(ctx context.Context, p redis.Pipeliner, sku, buyer string) func() error {
	cmd := p.ZRem(ctx, KeysFor(sku).InSection, buyer)
	return func() error { return wrap("ZREM inSection", cmd.Err()) }
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
