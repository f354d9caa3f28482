// Package policy holds no code, only the repository's policy tests: what the binary links
// (deps_test.go), that the documentation's links, commands and tests are real (docs_test.go,
// docs_binary_test.go), and that no package outside the lock library spells the library's key
// names (keynames_test.go). They read the repository from its root, where TestMain moves them.
package policy
