package script

import "testing"

// TestRepliesReadAlike: a reply reads the same with go-redis's int64 integers and the in-process
// Redis's ints, and a shape the script never answers is not ok.
func TestRepliesReadAlike(t *testing.T) {
	t.Parallel()
	for _, one := range []any{int64(1), 1} {
		if held, n, ok := LineAcquired([]any{one, int64(7)}); !held || n != 7 || !ok {
			t.Errorf("LineAcquired {1, 7} (%T): %v %d %v, want held, 7", one, held, n, ok)
		}
	}
	if held, n, ok := LineAcquired([]any{0, 250}); held || n != 250 || !ok {
		t.Errorf("LineAcquired {0, 250}: %v %d %v, want not held, 250", held, n, ok)
	}
	if _, _, ok := LineAcquired([]any{int64(1)}); ok {
		t.Error("LineAcquired {1}: ok, want a shape it never answers")
	}
	for _, tc := range []struct {
		reply []any
		want  LineReleased
		ok    bool
	}{
		{[]any{int64(0)}, LineReleased{}, true},
		{[]any{1}, LineReleased{Code: 1}, true},
		{[]any{int64(2), "p2:c1", int64(9)}, LineReleased{Code: 2, To: "p2:c1", Token: 9}, true},
		{[]any{3, "p1:c2", 4}, LineReleased{Code: 3, To: "p1:c2", Token: 4}, true},
		{[]any{3, "p1:c2", 4, 1}, LineReleased{Code: 3, To: "p1:c2", Token: 4, Cohort: true}, true},
		{[]any{int64(2), "p2:c1"}, LineReleased{}, false},
		{nil, LineReleased{}, false},
	} {
		if got, ok := ReadLineRelease(tc.reply); got != tc.want || ok != tc.ok {
			t.Errorf("ReadLineRelease %v: %+v %v, want %+v %v", tc.reply, got, ok, tc.want, tc.ok)
		}
	}
	if first, pttl, holder, ok := ReadFairBeat([]any{"w1", -2, ""}); first != "w1" || pttl != -2 || holder != "" || !ok {
		t.Errorf("ReadFairBeat: %q %d %q %v", first, pttl, holder, ok)
	}
	if kind, first, ok := ReadFairRelease([]any{int64(3), "w2"}); kind != 3 || first != "w2" || !ok {
		t.Errorf("ReadFairRelease: %d %q %v", kind, first, ok)
	}
	if _, _, ok := ReadFairRelease([]any{int64(3)}); ok {
		t.Error("ReadFairRelease {3}: ok, want a shape it never answers")
	}
}
