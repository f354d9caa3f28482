// Package ctxsleep is the lock module's one context-aware sleep, shared by the library and its
// fault hook (the service keeps its own, internal/ctxtime: a library user has no use for it).
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, whichever is first; it reports whether d elapsed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
