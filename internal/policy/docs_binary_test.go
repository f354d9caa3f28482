package policy

import (
	"os"
	"strings"
	"testing"
)

// TestDocsBuildTheBinaryTheyRun: a shell block that runs ./seckill builds it first in the same
// block (issue 37, item 6: "Running it somewhere public" ended with ./seckill, which nothing built).
func TestDocsBuildTheBinaryTheyRun(t *testing.T) {
	t.Parallel()
	for _, doc := range docFiles(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		inShell, built := false, false
		for n, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "```") {
				inShell = !inShell && (line == "```sh" || line == "```bash" || line == "```shell")
				built = false
				continue
			}
			if !inShell {
				continue
			}
			if strings.HasPrefix(line, "go build") && strings.Contains(line, "-o seckill") {
				built = true
			}
			if strings.HasPrefix(line, "./seckill") && !built {
				t.Errorf("%s:%d: %q runs a binary nothing in its block builds (add go build -o seckill .)", doc, n+1, line)
			}
		}
	}
}
