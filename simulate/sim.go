package simulate

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lock/core"
	"github.com/seckill-lab/seckill/lock/script"
)

// errDown is the reply of a master that is down.
var errDown = errors.New("master down")

// Sim runs one kind's step machines. It owns one in-process Redis engine per master; a World
// carries the data, so many worlds (the branches of a search) share the engines.
type Sim struct {
	cfg     Config
	kind    kind
	engines []*engine
	loaded  []uint64
	gen     uint64
	// swaps are scripts run instead of the library's, by name: a test's mutants of the scripts
	// (mutants_test.go). Nil but there.
	swaps map[string]string
}

// New builds a simulator for cfg (after Defaults and Validate).
func New(cfg Config) (*Sim, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := kinds[cfg.Kind]
	s := &Sim{cfg: cfg, kind: k}
	for range k.masters() {
		e, err := newEngine()
		if err != nil {
			return nil, err
		}
		s.engines = append(s.engines, e)
		s.loaded = append(s.loaded, 0)
	}
	return s, nil
}

// Start is the world before the first step.
func (s *Sim) Start() *World {
	n := s.cfg.PerProcess
	w := &World{Masters: make([]master, len(s.engines)), Clients: make([]Client, s.cfg.Clients), Procs: make([]proc, (s.cfg.Clients+n-1)/n)}
	for i := range w.Procs {
		w.Procs[i].Line = core.NewLine(core.Cohort)
	}
	for i := range w.Clients {
		c := &w.Clients[i]
		c.ID, c.Proc = i+1, i/n+1
		s.begin(w, c)
	}
	s.kind.setup(s, w)
	w.Calm = -1
	s.observe(w, 0)
	return w
}

func (s *Sim) masterTime(w *World, k int) time.Time {
	return epoch.Add(time.Duration(w.Now+w.Masters[k].Skew) * time.Millisecond)
}

// ensure loads master k's data of w into its engine unless it is there already.
func (s *Sim) ensure(w *World, k int) {
	if s.loaded[k] != w.Masters[k].Gen {
		s.engines[k].load(w.Masters[k].Data, s.masterTime(w, k))
		s.loaded[k] = w.Masters[k].Gen
	} else {
		s.engines[k].m.SetTime(s.masterTime(w, k))
	}
}

// keep stores the engine's data back into w as a new generation.
func (s *Sim) keep(w *World, k int) {
	s.gen++
	w.Masters[k].Gen = s.gen
	w.Masters[k].Data = s.engines[k].save()
	s.loaded[k] = s.gen
}

// exec runs one command on master k for client c, records it in the trace and routes what it
// published. label names it in the trace (a script's name instead of its source).
func (s *Sim) exec(w *World, c *Client, k int, label string, args ...string) any {
	if w.Masters[k].DownUntil > w.Now {
		s.note(w, c.name(), fmt.Sprintf("m%d %s", k, label), "ERR "+errDown.Error())
		return errDown
	}
	s.ensure(w, k)
	e := s.engines[k]
	e.pubs = e.pubs[:0]
	reply := e.do(args)
	s.keep(w, k)
	s.note(w, c.name(), fmt.Sprintf("m%d %s", k, label), replyText(reply))
	for _, p := range e.pubs {
		s.publish(w, k, p)
	}
	if err, ok := reply.(error); ok && !s.kind.expects(err) {
		s.unexpected(w, c, label, err)
	}
	return reply
}

// publish routes a message master k published to the processes that hear it.
func (s *Sim) publish(w *World, k int, p published) {
	for _, to := range s.kind.route(w, k, p.Channel) {
		if w.Clients[to].Crashed {
			// Sent to a dead process: lost, as a pub/sub message can be, and what its
			// receiver should have done waits on the relook bound of whoever comes next.
			s.note(w, w.Clients[to].name(), "lost "+p.Channel, "its process is dead")
			w.shake(s.kind.lostBound(s))
			continue
		}
		part := 0
		if s.kind.perMaster() {
			part = k // each part listens on its own master
		}
		if s.unheard(w, to, part) {
			s.note(w, w.Clients[to].name(), "unheard "+p.Channel, "not subscribed yet")
			continue
		}
		w.Msgs = append(w.Msgs, msg{To: to, Channel: p.Channel, Payload: p.Payload, At: w.Now, Part: part})
	}
}

// unexpected makes a reply no step expects a violation: an error from a script (a Lua error, a
// wrong argument), or a reply of the wrong shape. The scripts are the library's: one that fails
// is a bug the search must report, not a step to shrug off.
func (s *Sim) unexpected(w *World, c *Client, what string, reply any) {
	if w.Violation == "" {
		w.Violation = fmt.Sprintf("script: %s's %s got %s, which no step expects", c.acq(), what, replyText(reply))
	}
}

// script runs a Lua script by its full source, labelled with its name, KEYS and ARGV.
func (s *Sim) script(w *World, c *Client, k int, name, src string, keys []string, argv ...string) any {
	if swap, ok := s.swaps[name]; ok {
		src = swap
	}
	args := append([]string{"EVAL", src, fmt.Sprint(len(keys))}, keys...)
	args = append(args, argv...)
	label := fmt.Sprintf("EVAL %s KEYS=%q ARGV=%q", name, keys, argv)
	return s.exec(w, c, k, label, args...)
}

// call runs one of the library's scripts on master k, as the library sends it (lock/script's
// Calls), its arguments written as go-redis writes them.
func (s *Sim) call(w *World, c *Client, k int, call script.Call) any {
	argv := make([]string, len(call.Args))
	for i, a := range call.Args {
		argv[i] = fmt.Sprint(a)
	}
	return s.script(w, c, k, call.Script, sources[call.Script], call.Keys, argv...)
}

// sources are the library's scripts by name.
var sources = script.Sources()

// cmd runs a plain command.
func (s *Sim) cmd(w *World, c *Client, k int, args ...string) any {
	return s.exec(w, c, k, strings.Join(args, " "), args...)
}

// note appends one step to the trace.
func (s *Sim) note(w *World, who, what, reply string) {
	var locks []string
	for _, m := range w.Masters {
		v, ok := m.Data.get(s.kind.lockKey())
		if !ok {
			v = "-"
		}
		locks = append(locks, v)
	}
	w.trace = &traceNode{prev: w.trace, choice: -1, at: w.Now, who: who, what: what, reply: reply, locks: strings.Join(locks, " | ")}
	w.steps++
}

// amend adds text to the reply of the step's last trace line, without a step of its own: a
// copy of the node, as the one there may be shared with the worlds this one was cloned from.
func (s *Sim) amend(w *World, text string) {
	if w.trace == nil {
		return
	}
	n := *w.trace
	n.reply += text
	w.trace = &n
}

// forward moves the virtual clock to t: every master's keys age by the difference.
func (s *Sim) forward(w *World, t int64) {
	d := t - w.Now
	if d <= 0 {
		return
	}
	w.Now = t
	for k := range w.Masters {
		if len(w.Masters[k].Data) == 0 {
			continue
		}
		s.ensure(w, k)
		s.engines[k].forward(time.Duration(d) * time.Millisecond)
		s.keep(w, k)
	}
}

// wipe empties master k (a restart without its data).
func (s *Sim) wipe(w *World, k int) {
	s.gen++
	w.Masters[k].Gen = s.gen
	w.Masters[k].Data = nil
}

// jump runs master k's clock d ahead: its keys age by d at once and stay that far ahead.
func (s *Sim) jump(w *World, k int, d int64) {
	w.Masters[k].Skew += d
	if len(w.Masters[k].Data) == 0 {
		return
	}
	s.ensure(w, k)
	s.engines[k].forward(time.Duration(d) * time.Millisecond)
	s.keep(w, k)
}
