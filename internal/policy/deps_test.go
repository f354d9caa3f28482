package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: the service's binary links none of the repository's test helpers
// (testkit/locktest and anything under it, internal/testredis, internal/apptest), and no package of
// this repository imports package testing into it. The lab's fault hook and its Redis servers come
// from packages beside the test helpers that do not (testkit/fault, testkit/redisserver). The
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
		case pkg == "github.com/seckill-lab/seckill/testkit/locktest", strings.HasPrefix(pkg, "github.com/seckill-lab/seckill/testkit/locktest/"),
			pkg == "seckill/internal/testredis", pkg == "seckill/internal/apptest":
			t.Errorf("the binary links the test helper %s", pkg)
		}
		if ours(pkg) && strings.Contains(" "+imports+" ", " testing ") {
			t.Errorf("%s, linked into the binary, imports testing", pkg)
		}
	}
}

// TestLibraryShipsNoTestKit: no package of the lock module, tests left out, imports the test kit
// (testkit: servers to start, faults to inject), so a consumer's build never links it.
func TestLibraryShipsNoTestKit(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/seckill-lab/seckill/lock/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	n := 0
	for pkg := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		n++
		if strings.HasPrefix(pkg, "github.com/seckill-lab/seckill/testkit") {
			t.Errorf("the lock module's build links the test kit's %s", pkg)
		}
	}
	if n == 0 {
		t.Fatal("go list named no package of the lock module")
	}
}
