package lab

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestKeepPageIsBounded: a drawing that compresses to more than MaxKeptHistory is not kept in
// Redis, and the run says so; one within it is kept, compressed.
func TestKeepPageIsBounded(t *testing.T) {
	data := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: keepPage only compresses
	defer data.Close()
	for _, c := range []struct {
		size int
		kept bool
	}{{MaxKeptHistory / 2, true}, {MaxKeptHistory + 1, false}} {
		page := make([]byte, c.size)
		rand.Read(page) // random bytes do not compress: the page's size is about what would be kept
		e := &Env{Scenario: Scenario{Name: "none"}, runner: &Runner{Data: data}, res: &Result{}}
		e.keepPage(page)
		notes := strings.Join(e.res.Notes, " ")
		if e.res.HistoryKept != c.kept || (e.keptPage != nil) != c.kept || len(e.keptPage) > MaxKeptHistory {
			t.Errorf("a %d-byte page: kept %v (%d bytes), want %v; notes: %s", c.size, e.res.HistoryKept, len(e.keptPage), c.kept, notes)
		}
		if !c.kept && !strings.Contains(notes, "not kept there") {
			t.Errorf("a %d-byte page not kept, and the run does not say so: %s", c.size, notes)
		}
		if c.kept {
			back, err := gunzip(e.keptPage)
			if err != nil || string(back) != string(page) {
				t.Errorf("the kept page does not read back: %v", err)
			}
		}
	}
}
