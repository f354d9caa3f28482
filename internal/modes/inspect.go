package modes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/lock/lockutil"
)

// maxInspectKeys bounds how many keys Inspect reads per server, so a read-only view stays cheap
// whatever is in Redis.
const maxInspectKeys = 200

// ServerLocks is what one Redis server holds under a key prefix.
type ServerLocks struct {
	// Name is "data" for the data Redis, "master1".. for the independent masters.
	Name string     `json:"name" example:"master1"`
	Addr string     `json:"addr" example:"127.0.0.1:6381"`
	Keys []KeyState `json:"keys"`
	// Truncated: more keys matched than were read.
	Truncated bool `json:"truncated,omitempty"`
	// Error says why the server could not be read (it is down, for example).
	Error string `json:"error,omitempty"`
}

// KeyState is one lock key as read from Redis.
type KeyState struct {
	Key  string `json:"key" example:"{inventory001}:lock:reentrant"`
	Type string `json:"type" example:"hash"`
	// PTTLMs is the key's remaining time to live in ms; -1 means no TTL at all (a lock that
	// nobody will ever free: the deadlock of the setnx modes), -2 that it vanished while read.
	PTTLMs int64 `json:"pttlMs" example:"29950"`
	// Value is a string key's value (the holder's token or UUID).
	Value string `json:"value,omitempty"`
	// Holders are a hash lock's fields (Redisson layout: "<instance-id>:<owner>" -> hold count).
	Holders []Holder `json:"holders,omitempty"`
	// Queue lists a fair lock's waiters, first first, each with its deadline.
	Queue []Waiter `json:"queue,omitempty"`
	// Kind is "lock", or "fencing counter" for a fenced lock's token counter (the string among
	// the keys Locker.Keys lists beside the lock), which has no TTL by design: its tokens must
	// keep rising past every lock's expiry.
	Kind string `json:"kind" example:"lock"`
	// Deadlock: a lock key with no TTL, which nobody will ever free (never set on a counter).
	Deadlock bool `json:"deadlock,omitempty"`
}

// Waiter is one entry of a fair lock's queue in Redis (Locker.Queue reads it).
type Waiter struct {
	Field    string `json:"field" example:"6f1c...:order-43"`
	Instance string `json:"instance,omitempty"`
	Owner    string `json:"owner,omitempty"`
	// DeadlineMs is the waiter's deadline (unix ms): should it not take the lock by then, the
	// next acquire or release passes it over. 0: none found.
	DeadlineMs int64 `json:"deadlineMs" example:"1763900000000"`
	// ThisInstance: the waiter came through this service instance.
	ThisInstance bool `json:"thisInstance"`
}

// Holder is one field of a Redisson-layout lock hash.
type Holder struct {
	Field string `json:"field" example:"6f1c...:order-42"`
	// Instance is the client id part of the field (the service instance's UUID, or a Java
	// Redisson client's), Owner the rest (our order id, Redisson's thread id).
	Instance string `json:"instance,omitempty"`
	Owner    string `json:"owner,omitempty"`
	// Count is the hold count: how many releases the owner still owes.
	Count int64 `json:"count" example:"1"`
	// ThisInstance: the field was written by this service instance.
	ThisInstance bool `json:"thisInstance"`
}

// Inspect reads, without changing anything, on the data Redis and on every master, every key
// starting with prefix and the fencing counters each mode keeps beside its lock named
// lockKey(mode) (Registry.Keys names them), and the fair lock's queue (the library reads it). A server that cannot be read is
// reported in its entry, not as an error.
func (r *Registry) Inspect(ctx context.Context, prefix string, lockKey func(mode string) string) []ServerLocks {
	type server struct {
		name string
		c    redis.UniversalClient
	}
	servers := []server{{"data", r.deps.Data}}
	for i, m := range r.deps.Masters {
		servers = append(servers, server{fmt.Sprintf("master%d", i+1), m})
	}
	locks := r.Keys(lockKey)
	out := make([]ServerLocks, 0, len(servers))
	for _, s := range servers {
		if s.c == nil {
			continue
		}
		sl := ServerLocks{Name: s.name, Addr: lockutil.Addr(s.c), Keys: []KeyState{}}
		keys, truncated, err := inspectServer(ctx, s.c, prefix, locks, r.deps.InstanceID)
		if err == nil && s.name == "data" {
			keys, err = r.attachQueues(ctx, lockKey, keys)
		}
		if err != nil {
			sl.Error = err.Error()
		}
		sl.Keys, sl.Truncated = keys, truncated
		out = append(out, sl)
	}
	return out
}

// inspectServer reads c's keys under prefix and the side keys of locks (each lock's keys, the
// lock key first) that are fencing counters (strings: the lines, queues and hashes beside a lock
// are not).
func inspectServer(ctx context.Context, c redis.UniversalClient, prefix string, locks [][]string, self string) ([]KeyState, bool, error) {
	var names []string
	truncated := false
	iter := c.Scan(ctx, 0, lockutil.GlobEscape(prefix)+"*", 100).Iterator()
	for iter.Next(ctx) {
		if len(names) == maxInspectKeys {
			truncated = true
			break
		}
		names = append(names, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return []KeyState{}, false, redisErr("SCAN "+prefix+"*", err)
	}
	sideTypes, err := typesOf(ctx, c, locks)
	if err != nil {
		return []KeyState{}, false, err
	}
	counters := map[string]bool{}
	for k, typ := range sideTypes {
		if typ == "string" {
			counters[k] = true
			if len(names) < maxInspectKeys {
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	names = slices.Compact(names) // SCAN may return a key twice

	types := make([]*redis.StatusCmd, len(names))
	pttls := make([]*redis.Cmd, len(names))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range names {
			types[i] = p.Type(ctx, k)
			pttls[i] = p.Do(ctx, "PTTL", k)
		}
		return nil
	}); err != nil {
		return []KeyState{}, truncated, redisErr("TYPE/PTTL", err)
	}
	keys := make([]KeyState, len(names))
	hashes := make([]*redis.MapStringStringCmd, len(names))
	strs := make([]*redis.StringCmd, len(names))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range names {
			keys[i] = KeyState{Key: k, Type: types[i].Val(), PTTLMs: -2}
			if pttl, err := pttls[i].Int64(); err == nil {
				keys[i].PTTLMs = pttl
			}
			switch keys[i].Type {
			case "hash":
				hashes[i] = p.HGetAll(ctx, k)
			case "string":
				strs[i] = p.Get(ctx, k)
			}
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return keys, truncated, redisErr("HGETALL/GET", err)
	}
	for i := range keys {
		switch {
		case hashes[i] != nil:
			keys[i].Holders = holders(hashes[i].Val(), self)
		case strs[i] != nil:
			keys[i].Value = strs[i].Val()
		}
		keys[i].Kind = "lock"
		if counters[keys[i].Key] && keys[i].Type == "string" {
			keys[i].Kind = "fencing counter"
		}
		keys[i].Deadlock = keys[i].Kind == "lock" && keys[i].PTTLMs == -1
	}
	return keys, truncated, nil
}

// typesOf reads the type of every side key of locks (each lock's keys after the first) that
// exists on c.
func typesOf(ctx context.Context, c redis.UniversalClient, locks [][]string) (map[string]string, error) {
	var side []string
	for _, l := range locks {
		if len(l) > 1 {
			side = append(side, l[1:]...)
		}
	}
	slices.Sort(side)
	side = slices.Compact(side)
	cmds := make([]*redis.StatusCmd, len(side))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range side {
			cmds[i] = p.Type(ctx, k)
		}
		return nil
	}); err != nil {
		return nil, redisErr("TYPE", err)
	}
	out := map[string]string{}
	for i, k := range side {
		if t := cmds[i].Val(); t != "none" {
			out[k] = t
		}
	}
	return out, nil
}

// queuer is a mode's Locker that can read the waiters it keeps in Redis (the library's
// Locker.Queue: only the fair lock has any).
type queuer interface {
	Queue(ctx context.Context, name string) (fields []string, deadlines []time.Time, err error)
}

// attachQueues adds to keys (the data Redis's) the queue of every mode that keeps one, as the
// library reads it: a queue whose lock key is not there (the lock is free, the first waiter not
// yet in) gets an entry of its own.
func (r *Registry) attachQueues(ctx context.Context, lockKey func(mode string) string, keys []KeyState) ([]KeyState, error) {
	for _, m := range Modes() {
		q, ok := r.lockers[m.Name].(queuer)
		if !ok {
			continue
		}
		name := lockKey(m.Name)
		fields, deadlines, err := q.Queue(ctx, name)
		if err != nil {
			return keys, err
		}
		if len(fields) == 0 {
			continue
		}
		line := make([]Waiter, len(fields))
		for i, f := range fields {
			line[i] = Waiter{Field: f}
			if !deadlines[i].IsZero() {
				line[i].DeadlineMs = deadlines[i].UnixMilli()
			}
			line[i].Instance, line[i].Owner, line[i].ThisInstance = splitField(f, r.deps.InstanceID)
		}
		at := slices.IndexFunc(keys, func(k KeyState) bool { return k.Key == name })
		if at < 0 {
			keys = append(keys, KeyState{Key: name, Type: "none", PTTLMs: -2, Kind: "lock"})
			at = len(keys) - 1
		}
		keys[at].Queue = line
	}
	return keys, nil
}

func holders(h map[string]string, self string) []Holder {
	out := make([]Holder, 0, len(h))
	for field, v := range h {
		n, _ := strconv.ParseInt(v, 10, 64) // not a count: shown as 0, the field still named
		hd := Holder{Field: field, Count: n}
		hd.Instance, hd.Owner, hd.ThisInstance = splitField(field, self)
		out = append(out, hd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// splitField splits a Redisson-layout field "<instance-id>:<owner>" (the client id is a UUID,
// which has no colon: the first colon ends it); this: the field was written by instance self.
// A field without a colon has neither part.
func splitField(field, self string) (instance, owner string, this bool) {
	instance, owner, ok := strings.Cut(field, ":")
	if !ok {
		return "", "", false
	}
	return instance, owner, instance == self
}

// PTTL is one reading of a key's remaining time to live.
type PTTL struct {
	Ms  int64 // -1: no TTL; -2: no such key (or unreadable, then Err says why)
	Err error
}

// MasterPTTLs reads key's PTTL on every master, in master order (the multilock demo samples it).
func (r *Registry) MasterPTTLs(ctx context.Context, key string) []PTTL {
	out := make([]PTTL, len(r.deps.Masters))
	for i, m := range r.deps.Masters {
		n, err := m.Do(ctx, "PTTL", key).Int64()
		if err != nil {
			out[i] = PTTL{Ms: -2, Err: redisErr("PTTL "+key, err)}
			continue
		}
		out[i] = PTTL{Ms: n}
	}
	return out
}

// MasterAddrs lists the masters' addresses, in master order.
func (r *Registry) MasterAddrs() []string {
	out := make([]string, len(r.deps.Masters))
	for i, m := range r.deps.Masters {
		out[i] = lockutil.Addr(m)
	}
	return out
}
