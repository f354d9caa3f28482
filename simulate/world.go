package simulate

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// master is one simulated Redis server's data, tagged with a generation so the engine knows
// whether it holds it already.
type master struct {
	Gen  uint64
	Data redisState
	// Skew is how far this master's clock runs ahead of the virtual clock (clock-fast).
	Skew int64
	// DownUntil: commands fail until then (master-down).
	DownUntil int64
}

// msg is a pub/sub message on its way to one client; At is the earliest it may arrive.
type msg struct {
	To               int
	Channel, Payload string
	At               int64
	Part             int // the queue of the receiving process it rings (multilock's: the master)
}

// resource is what the clients protect: a counter each holder reads when it enters and writes
// (one more) before it leaves, with a fencing token where the kind has one. Where the kind fences,
// MaxToken is the service's fence: the newest token whose read or write was accepted
// (store/lua/fenced_read.lua, commit.lua).
type resource struct {
	Version    int
	MaxToken   int64
	WriteToken int64 // the token of the last accepted write
	// Writer is the acquisition ("c<id>.r<round>") of the last accepted write.
	Writer string
	// Sold counts the sales acknowledged to clients (atomic, whose resource is the Redis stock).
	Sold int
	// Reads counts the readers' entries (readwrite), Reader names the last: a writer whose write
	// finds it moved since its own entry was inside with a reader.
	Reads  int
	Reader string
}

// World is the whole simulated state at one instant: the virtual clock, every master's data,
// every client's step machine, the messages in flight and the resource. Clone copies it.
type World struct {
	Now        int64 // virtual ms since epoch
	Masters    []master
	Clients    []Client
	Procs      []proc // the clients' processes, by Client.Proc - 1
	Msgs       []msg
	Res        resource
	FaultsUsed int
	// Calm is when the lock became free with no fault in effect (-1: it is not); Shaken is
	// when the effect window of the last restart, clock jump or pub/sub fault ends
	// (liveness.go).
	Calm, Shaken int64
	// Broken: a master restarted empty or its clock jumped, which takes a lock from under its
	// lease by design (the check of a lease's honesty is off from then on).
	Broken    bool
	Finished  bool
	Violation string
	trace     *traceNode
	steps     int
}

// traceNode is one step of the trace, linked to the one before (shared between clones).
type traceNode struct {
	prev   *traceNode
	choice int
	at     int64
	who    string
	what   string
	reply  string
	locks  string // the lock's value on each master after the step
}

func (w *World) clone() *World {
	c := *w
	c.Masters = append([]master(nil), w.Masters...)
	c.Clients = append([]Client(nil), w.Clients...)
	c.Procs = append([]proc(nil), w.Procs...)
	for i := range c.Procs {
		for q := range c.Procs[i].Qs {
			c.Procs[i].Qs[q] = c.Procs[i].Qs[q].Clone()
		}
		c.Procs[i].Line = c.Procs[i].Line.Clone()
	}
	c.Msgs = append([]msg(nil), w.Msgs...)
	return &c
}

// hash identifies the state for the exhaustive search: everything but the trace. How long the
// lock has been calm counts up to g+1 ms (g: the kind's relook bound): past g every give-up is
// a violation, however long it has been.
func (w *World) hash(g int64) [16]byte {
	var b strings.Builder
	calm := w.calmFor()
	if calm > g {
		calm = g + 1
	}
	fmt.Fprintf(&b, "%d %d %v %+v %d %d %v\n", w.Now, w.FaultsUsed, w.Finished, w.Res, calm, w.Shaken, w.Broken)
	for _, m := range w.Masters {
		fmt.Fprintf(&b, "m %d %d\n%s", m.Skew, m.DownUntil, m.Data.String())
	}
	for _, c := range w.Clients {
		fmt.Fprintf(&b, "%+v\n", c)
	}
	for _, p := range w.Procs {
		fmt.Fprintf(&b, "%+v\n", p)
	}
	for _, m := range w.Msgs {
		fmt.Fprintf(&b, "%+v\n", m)
	}
	sum := sha256.Sum256([]byte(b.String()))
	var h [16]byte
	copy(h[:], sum[:])
	return h
}

// ms turns a duration into virtual milliseconds.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// Trace is the canonical text of every step, one line each.
func (w *World) Trace() []string {
	var nodes []*traceNode
	for n := w.trace; n != nil; n = n.prev {
		nodes = append(nodes, n)
	}
	lines := make([]string, len(nodes))
	for i, n := range nodes {
		lines[len(nodes)-1-i] = n.line()
	}
	return lines
}

func (n *traceNode) line() string {
	return fmt.Sprintf("t=%d %s %s -> %s", n.at, n.who, n.what, n.reply)
}

// Choices is the sequence of scheduler choices that led here: the last line of each step holds
// its choice, and the lines before it in a step hold -1 (a message unheard, a settle's commands).
func (w *World) Choices() []int {
	var c []int
	for n := w.trace; n != nil; n = n.prev {
		if n.choice >= 0 {
			c = append(c, n.choice)
		}
	}
	for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
		c[i], c[j] = c[j], c[i]
	}
	return c
}

// TraceHash is the sha256 of the trace's text.
func (w *World) TraceHash() string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(w.Trace(), "\n"))))
}
