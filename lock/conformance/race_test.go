//go:build race

package conformance

// The race detector makes every test several times as costly in CPU: keep to parallelTests.
func init() { raceDetector = true }
