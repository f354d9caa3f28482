package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain runs the tests from the repository's root: the paths they read and the packages they
// list (".") are the root's, as they were when these tests lived in package main.
func TestMain(m *testing.M) {
	if err := os.Chdir(filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, "policy: move to the repository's root:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
