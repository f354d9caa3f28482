package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/lock"
)

// readme:begin
// writeReport does its work under the lock "report", and stops when it loses it.
func writeReport(ctx context.Context, locker *lock.Locker) error {
	lease, err := locker.Acquire(ctx, "report", lock.Options{Wait: 5 * time.Second})
	if err != nil {
		return err // errors.Is(err, lock.ErrNotObtained): not ours within 5 s (or ctx ended)
	}
	defer lease.Release(context.WithoutCancel(ctx))
	select {
	case <-lease.Lost(): // the lock is gone (no renewal): stop writing
		return errors.New("lost the lock")
	case err := <-work(ctx):
		return err
	}
}

// readme:end

// work stands for the caller's job.
func work(context.Context) <-chan error {
	done := make(chan error, 1)
	done <- nil
	return done
}

// The README's lines, run: a reentrant lock (Redisson's RLock) shared by the process, one
// acquisition per job.
func Example() {
	clients, _, stop := exampleRedis(1)
	defer stop()
	locker, err := lock.NewReentrant(clients[0]) // one per process and lock kind; share it
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	fmt.Println("report:", writeReport(context.Background(), locker))
	// Output: report: <nil>
}

// TestReadmeSnippetsAreTheExample: the lines README.md, lock/README.md and docs/library.md show
// are writeReport as this file has it, so they compile and handle every error.
func TestReadmeSnippetsAreTheExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	body := strings.TrimSpace(s[strings.Index(s, "// readme:begin")+len("// readme:begin") : strings.Index(s, "// readme:end")])
	for _, page := range []string{"README.md", "../README.md", "../docs/library.md"} {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if !strings.Contains(string(text), "```go\n"+body+"\n```") {
			t.Errorf("%s does not show writeReport as example_readme_test.go has it", page)
		}
	}
}
