package simulate

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/proto"
	"github.com/alicebob/miniredis/v2/server"
)

// epoch is virtual time zero: every simulated clock counts milliseconds from it.
var epoch = time.UnixMilli(1_800_000_000_000).UTC()

// keySnap is one key of a master, with what it holds and its remaining TTL (0: none).
type keySnap struct {
	Key  string
	Type string
	Str  string
	List []string
	Hash []string // field, value, field, value... sorted by field
	ZSet []string // member, score... sorted by member
	TTL  time.Duration
}

// redisState is a master's whole data set, sorted by key: what the world keeps between steps.
type redisState []keySnap

// published is one PUBLISH a command made (scripts included).
type published struct{ Channel, Payload string }

// engine runs commands on one in-process miniredis, loaded from a redisState before a step and
// read back after it. PUBLISH never reaches miniredis: a pre-hook records it, so the simulator,
// not a goroutine, decides when (and whether) each message is delivered.
type engine struct {
	m    *miniredis.Miniredis
	srv  *server.Server
	buf  bytes.Buffer
	w    *bufio.Writer
	peer *server.Peer
	pubs []published
}

func newEngine() (*engine, error) {
	m := miniredis.NewMiniRedis()
	c, err := m.Dial() // starts the server without a listener
	if err != nil {
		return nil, fmt.Errorf("simulate: start the in-process redis: %w", err)
	}
	_ = c.Close()
	e := &engine{m: m, srv: m.Server()}
	e.w = bufio.NewWriter(&e.buf)
	e.peer = server.NewPeer(e.w)
	e.srv.SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		if cmd != "PUBLISH" || len(args) != 2 {
			return false
		}
		e.pubs = append(e.pubs, published{args[0], args[1]})
		c.WriteInt(0)
		return true
	})
	return e, nil
}

// load replaces the data with s, at master time now.
func (e *engine) load(s redisState, now time.Time) {
	e.m.FlushAll()
	e.m.SetTime(now)
	for _, k := range s {
		switch k.Type {
		case "string":
			_ = e.m.Set(k.Key, k.Str)
		case "list":
			_, _ = e.m.Push(k.Key, k.List...)
		case "hash":
			e.m.HSet(k.Key, k.Hash...)
		case "zset":
			for i := 0; i+1 < len(k.ZSet); i += 2 {
				f, _ := strconv.ParseFloat(k.ZSet[i+1], 64)
				_, _ = e.m.ZAdd(k.Key, f, k.ZSet[i])
			}
		}
		if k.TTL > 0 {
			e.m.SetTTL(k.Key, k.TTL)
		}
	}
}

// save reads the data back.
func (e *engine) save() redisState {
	keys := e.m.Keys()
	sort.Strings(keys)
	s := make(redisState, 0, len(keys))
	for _, key := range keys {
		k := keySnap{Key: key, Type: e.m.Type(key), TTL: e.m.TTL(key)}
		switch k.Type {
		case "string":
			k.Str, _ = e.m.Get(key)
		case "list":
			k.List, _ = e.m.List(key)
		case "hash":
			fields, _ := e.m.HKeys(key)
			sort.Strings(fields)
			for _, f := range fields {
				k.Hash = append(k.Hash, f, e.m.HGet(key, f))
			}
		case "zset":
			members, _ := e.m.SortedSet(key)
			names := make([]string, 0, len(members))
			for n := range members {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				k.ZSet = append(k.ZSet, n, strconv.FormatFloat(members[n], 'f', -1, 64))
			}
		}
		s = append(s, k)
	}
	return s
}

// do runs one command and returns its reply (a Redis error reply as an error value).
func (e *engine) do(args []string) any {
	e.buf.Reset()
	e.srv.Dispatch(e.peer, args)
	_ = e.w.Flush()
	switch e.buf.String() {
	case "$-1\r\n", "*-1\r\n", "_\r\n":
		return nil
	}
	v, err := proto.Parse(e.buf.String())
	if err != nil {
		return fmt.Errorf("simulate: unreadable reply %q: %w", e.buf.String(), err)
	}
	return v
}

// forward moves the data's clock by d: TTLs shrink and keys expire.
func (e *engine) forward(d time.Duration) { e.m.FastForward(d) }

// String is the canonical text of a state, for hashing and for the page.
func (s redisState) String() string {
	var b strings.Builder
	for _, k := range s {
		fmt.Fprintf(&b, "%s %s ttl=%d", k.Key, k.Type, k.TTL.Milliseconds())
		switch k.Type {
		case "string":
			fmt.Fprintf(&b, " %q", k.Str)
		case "list":
			fmt.Fprintf(&b, " %q", k.List)
		case "hash":
			fmt.Fprintf(&b, " %q", k.Hash)
		case "zset":
			fmt.Fprintf(&b, " %q", k.ZSet)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// get is the value of a string key ("" when none).
func (s redisState) get(key string) (string, bool) {
	for _, k := range s {
		if k.Key == key {
			switch k.Type {
			case "string":
				return k.Str, true
			case "hash":
				return strings.Join(k.Hash, "="), true
			}
			return k.Type, true
		}
	}
	return "", false
}

// replyText is the canonical text of a reply.
func replyText(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case error:
		return "ERR " + v.Error()
	case string:
		return strconv.Quote(v)
	case int:
		return strconv.Itoa(v)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = replyText(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%v", v)
}
