package lock

// fifo is one key's waiters in one process, in arrival order: the in-process queue of every kind
// but fair (waiting.go rules 3 and 13). Only its head contends in Redis: a waiter that enters an
// empty queue is the head at once (enter says so), and one behind is rung when the head before it
// leaves, so a later waiter never overtakes an earlier one. It does no locking of its own: its
// owner, handoff, guards it with its mutex.
type fifo[W interface {
	comparable
	becameHead()
}] struct {
	waiters []W // waiters[0] is the head
}

// enter puts w at the tail and reports whether it is the head at once.
func (f *fifo[W]) enter(w W) (head bool) {
	f.waiters = append(f.waiters, w)
	return len(f.waiters) == 1
}

// head is the head, if anyone waits.
func (f *fifo[W]) head() (W, bool) {
	if len(f.waiters) == 0 {
		var none W
		return none, false
	}
	return f.waiters[0], true
}

// leave takes w out wherever it stands; when it was the head, the next waiter becomes the head
// and is rung. It reports whether w was the head.
func (f *fifo[W]) leave(w W) (wasHead bool) {
	for i, q := range f.waiters {
		if q == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			wasHead = i == 0
			break
		}
	}
	if wasHead && len(f.waiters) > 0 {
		f.waiters[0].becameHead()
	}
	return wasHead
}

// empty reports whether nobody waits.
func (f *fifo[W]) empty() bool { return len(f.waiters) == 0 }
