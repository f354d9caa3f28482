package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: the service's binary links none of the repository's test helpers
// (lock/locktest and anything under it, internal/testredis, internal/apptest), and no package of
// this repository imports package testing into it. The lab's fault hook and its Redis servers come
// from packages outside the test helpers' path that do not (lock/fault, lock/redisserver). The
// binary does link package testing, through the mandated Swagger libraries only (docs/development.md
// names the chain: swag imports golang.org/x/tools, whose internal/modindex imports testing).
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
		switch {
		case pkg == "github.com/seckill-lab/seckill/lock/locktest", strings.HasPrefix(pkg, "github.com/seckill-lab/seckill/lock/locktest/"),
			pkg == "seckill/internal/testredis", pkg == "seckill/internal/apptest":
			t.Errorf("the binary links the test helper %s", pkg)
		}
		if ours(pkg) && strings.Contains(" "+imports+" ", " testing ") {
			t.Errorf("%s, linked into the binary, imports testing", pkg)
		}
	}
}
