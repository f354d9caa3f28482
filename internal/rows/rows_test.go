package rows

import (
	"slices"
	"testing"
)

type item struct {
	row  int
	name string
}

func TestSetOrdersByRowThenName(t *testing.T) {
	s := New("item", func(i item) (int, string) { return i.row, i.name })
	for _, i := range []item{{2, "b"}, {1, "z"}, {2, "a"}, {0, "m"}} {
		s.Add(i)
	}
	if got, want := s.Names(), []string{"m", "z", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if v, ok := s.Get("z"); !ok || v.row != 1 {
		t.Errorf("Get(z) = %v, %v", v, ok)
	}
	if _, ok := s.Get("missing"); ok {
		t.Error("Get(missing) found something")
	}
}

func TestSetAddTwicePanics(t *testing.T) {
	s := New("item", func(i item) (int, string) { return i.row, i.name })
	s.Add(item{1, "a"})
	defer func() {
		if r := recover(); r == nil {
			t.Error("adding a name twice did not panic")
		}
	}()
	s.Add(item{2, "a"})
}
