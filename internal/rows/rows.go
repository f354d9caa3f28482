// Package rows keeps named things in the order of the story's rows: the lock modes and the lab's
// scenarios each register themselves from their own files and are listed by row, then by name.
package rows

import (
	"fmt"
	"sort"
	"sync"
)

// Set holds values of T by name. The zero value is not usable; make one with New.
type Set[T any] struct {
	kind string
	key  func(T) (row int, name string)

	mu sync.Mutex
	m  map[string]T
}

// New returns an empty set of kind (used in the panic for a name added twice); key gives a
// value's row and name.
func New[T any](kind string, key func(T) (row int, name string)) *Set[T] {
	return &Set[T]{kind: kind, key: key, m: map[string]T{}}
}

// Add puts v in the set; a name added twice is a programming error and panics.
func (s *Set[T]) Add(v T) {
	_, name := s.key(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.m[name]; dup {
		panic(fmt.Sprintf("%s registered twice: %s", s.kind, name))
	}
	s.m[name] = v
}

// All lists every value by row, then by name.
func (s *Set[T]) All() []T {
	s.mu.Lock()
	out := make([]T, 0, len(s.m))
	for _, v := range s.m {
		out = append(out, v)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		ri, ni := s.key(out[i])
		rj, nj := s.key(out[j])
		if ri != rj {
			return ri < rj
		}
		return ni < nj
	})
	return out
}

// Names lists every name in the order of All.
func (s *Set[T]) Names() []string {
	var names []string
	for _, v := range s.All() {
		_, name := s.key(v)
		names = append(names, name)
	}
	return names
}

// Get returns the value called name.
func (s *Set[T]) Get(name string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[name]
	return v, ok
}
