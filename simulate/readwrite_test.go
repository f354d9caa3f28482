package simulate

import (
	"slices"
	"strings"
	"testing"
)

// TestReadersShare: with no fault, at 3 clients (c1 writes, c2 and c3 read), some schedule has
// both readers inside at once, each with its field in the lock's hash in read mode; and the
// search that reaches it finds no violation. A writer that excluded readers from each other would
// pass every other check of the kind.
func TestReadersShare(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "readwrite", Clients: 3})
	shared := 0
	var first *World
	seen := map[[16]byte]bool{}
	var walk func(w *World)
	walk = func(w *World) {
		if w.Violation != "" {
			t.Fatalf("violation: %s\n%s", w.Violation, strings.Join(w.Trace(), "\n"))
		}
		h := w.hash(s.kind.relook(s))
		if w.Finished || seen[h] {
			return
		}
		seen[h] = true
		if w.Clients[1].Inside && w.Clients[2].Inside {
			shared++
			if first == nil {
				first = w
			}
		}
		for i, c := range s.Choices(w) {
			next := w.clone()
			s.Apply(next, c, i)
			walk(next)
		}
	}
	walk(s.Start())
	if first == nil {
		t.Fatalf("no state of %d has c2 and c3 inside at once: readers never share", len(seen))
	}
	lock, ok := first.Masters[0].Data.get(lockName)
	if !ok || !strings.Contains(lock, "mode=read") || !strings.Contains(lock, "p2:c2.r0=1") || !strings.Contains(lock, "p3:c3.r0=1") {
		t.Errorf("both readers inside, the lock is %q, want read mode with both fields\n%s", lock, strings.Join(first.Trace(), "\n"))
	}
	t.Logf("%d of %d states have both readers inside; the first:\n%s", shared, len(seen), strings.Join(first.Trace(), "\n"))
}

// TestReadWriteCheckersAreNotVacuous: a write landing while a reader is inside is reported by
// the reader's second read; a reader entering while a writer is inside by the writer's write;
// one after the other, neither. A reader asleep while another reader holds the lock is a `wake`
// violation, and not while the writer holds it.
func TestReadWriteCheckersAreNotVacuous(t *testing.T) {
	t.Parallel()
	s := mustSim(t, Config{Kind: "readwrite", Clients: 3})
	for _, tc := range []struct {
		name  string
		order []string // "e<i>": client i enters; "w<i>": it writes (a reader reads again)
		want  string
	}{
		{"a write inside a read", []string{"e2", "e1", "w1", "w2"}, "mutual exclusion: reader c2.r0 read v0 on entering and v1"},
		{"a read inside a write", []string{"e1", "e2", "w2", "w1"}, "mutual exclusion: c1.r0 wrote after c2.r0, a reader"},
		{"readers share", []string{"e2", "e3", "w3", "w2"}, ""},
		{"one after the other", []string{"e1", "w1", "e2", "w2", "e3", "w3"}, ""},
	} {
		w := s.Start()
		for _, op := range tc.order {
			c := &w.Clients[op[1]-'1']
			if op[0] == 'e' {
				s.enter(w, c, 0)
			} else {
				s.write(w, c)
			}
		}
		if !strings.HasPrefix(w.Violation, tc.want) || (tc.want == "") != (w.Violation == "") {
			t.Errorf("%s: %q, want %q", tc.name, w.Violation, tc.want)
		}
	}
	for _, tc := range []struct {
		holder string
		want   string
	}{
		{"step c2", "wake: c3.r0 slept from 0 to 100 ms while the lock would let it in"},
		{"step c1", ""},
	} {
		w := drive(t, s, tc.holder)
		s.checkPrompt(w, 100)
		if !slices.ContainsFunc(w.Clients, func(c Client) bool { return c.Inside }) || !strings.HasPrefix(w.Violation, tc.want) || (tc.want == "") != (w.Violation == "") {
			t.Errorf("%s, then c3 sleeps 100 ms: %q, want %q", tc.holder, w.Violation, tc.want)
		}
	}
}
