package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: the service's binary links none of the repository's test helpers
// (the test servers of lock/locktest, internal/testredis, internal/apptest), and no package of
// this repository imports package testing into it. The lab's fault hook and the in-process Redis
// come from packages of their own that do not (lock/locktest/fault, lock/locktest/redisserver).
// swag's dependency golang.org/x/tools does import testing; that is its, not ours.
func TestBinaryLinksNoTestCode(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	ours := func(p string) bool {
		return p == "seckill" || strings.HasPrefix(p, "seckill/") || strings.HasPrefix(p, "github.com/seckill-lab/seckill/")
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		switch pkg {
		case "github.com/seckill-lab/seckill/lock/locktest", "seckill/internal/testredis", "seckill/internal/apptest":
			t.Errorf("the binary links the test helper %s", pkg)
		}
		if ours(pkg) && strings.Contains(" "+imports+" ", " testing ") {
			t.Errorf("%s, linked into the binary, imports testing", pkg)
		}
	}
}
