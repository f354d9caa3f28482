//go:build race

package lock

// The race detector makes every test several times as costly in CPU: keep to parallelTests.
func init() { raceDetector = true }
