package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoLibraryKeyNameOutsideLock: the lock library names its own keys (Locker.Keys; lock/script
// for a channel or a name a test writes as a Redisson client would); no file of this module,
// outside the library's module under lock/, spells one of them (nor the names they had when they
// carried the service's name), so reset, /locks and the lab cannot drift from it. That includes
// Redisson's own names (its lock prefix), which the library implements: only the interop tests
// (internal/interop) spell them, as the specification they check the library against, written
// from Redisson's protocol rather than from the library.
func TestNoLibraryKeyNameOutsideLock(t *testing.T) {
	t.Parallel()
	// Spelled in pieces, so this file does not match itself.
	banned := []string{"golock" + "_", "seckill" + "_lock_line", "seckill" + "_lock_waiters", "seckill" + "_lock_grant",
		"seckill" + "_fair", "seckill" + "_rlock", "redisson" + "_lock_"}
	// The specification's own files may spell Redisson's names, and only those.
	spec := map[string]bool{"redisson" + "_lock_": true}
	specDir := filepath.Join("internal", "interop") + string(filepath.Separator)
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir // lock/, examples/consumer: modules of their own
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".lua" && ext != ".yaml" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, name := range banned {
			if spec[name] && strings.HasPrefix(path, specDir) {
				continue
			}
			if strings.Contains(string(b), name) {
				t.Errorf("%s spells the library's key name %s…: ask the Locker (Keys)", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files", checked)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
