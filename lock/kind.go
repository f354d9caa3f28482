// What every kind implements for Locker (locker, heldLock), the small interfaces a lease may
// add, and the count of holds in this process that the hash kinds keep (holdCount).

package lock

import (
	"context"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// locker is what every lock implements; Locker wraps one.
type locker interface {
	// Acquire is Locker.Acquire's, with opts.Lease set (the Locker's default when it was 0).
	Acquire(ctx context.Context, key string, opts Options) (heldLock, error)
	Close() error
}

// heldLock is what every lock's lease implements; Lease wraps one.
type heldLock interface {
	Key() string
	Token() int64
	// Lost is closed by the lease's own life (watchdog.go), with a watchdog or without (a watched
	// multilock's, by any of its parts'); never nil.
	Lost() <-chan struct{}
	// releaseAfter releases the lock after the holder's pipeline p (nil: none), sent with the
	// release where the lock allows it (runScript), else executed first. A release that failed on
	// a transient error (the server did not answer, the context ended) leaves the lease
	// releasable again (releaseGate).
	releaseAfter(ctx context.Context, p redis.Pipeliner) error
	refresh(ctx context.Context) error
}

// renewer is implemented by the leases with a watchdog.
type renewer interface{ Renewals() int64 }

// hashLease is implemented by the leases in Redisson's hash layout.
type hashLease interface{ Field() string }

// partsLease is implemented by the multilock's lease.
type partsLease interface{ Parts() []heldLock }

// ownerOf is the owner of one acquisition: opts.Owner, or a new one for this acquisition alone.
func ownerOf(opts Options) string {
	if opts.Owner != "" {
		return opts.Owner
	}
	return uuid.NewString()
}

// holdCount counts the holds this process has of each lock, by "key NUL owner" (or field); a
// count that reaches 0 is deleted. It has no lock of its own: each kind guards it with its mutex.
type holdCount map[string]int

// add adds n to id's holds.
func (h holdCount) add(id string, n int) {
	if c := h[id] + n; c > 0 {
		h[id] = c
		return
	}
	delete(h, id)
}

// has reports whether this process holds id.
func (h holdCount) has(id string) bool { return h[id] > 0 }
