package lockutil

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(t.Context(), time.Millisecond) {
		t.Fatal("a sleep with a live context did not elapse")
	}
	if !Sleep(t.Context(), 0) {
		t.Fatal("a zero sleep with a live context did not elapse")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Minute) {
		t.Fatal("a sleep with an ended context elapsed")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("a sleep with an ended context waited")
	}
	if Sleep(ctx, 0) {
		t.Fatal("a zero sleep with an ended context elapsed")
	}
}
