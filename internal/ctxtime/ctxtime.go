// Package ctxtime holds the one context-aware sleep of the service, the lab and the explorer.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends; it reports whether d elapsed (a d ≤ 0 elapses at once
// while ctx is live).
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
