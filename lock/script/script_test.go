package script

import (
	"strings"
	"testing"
)

// TestSourcesAreWhole: every script is listed once, non-empty, and the line scripts start with
// the shared queue fragment they are assembled from.
func TestSourcesAreWhole(t *testing.T) {
	t.Parallel()
	if n := len(Names()); n != 16 {
		t.Fatalf("%d scripts, want 16", n)
	}
	for name, src := range Sources() {
		if !strings.Contains(src, "redis.call") {
			t.Errorf("%s: no redis.call in its source", name)
		}
	}
	if !strings.HasPrefix(LineAcquire, queueOnce+linePrelude) || !strings.HasSuffix(LineRelease, lineRelease) {
		t.Error("the line scripts are not queue_once + line_prelude + their own part")
	}
}
