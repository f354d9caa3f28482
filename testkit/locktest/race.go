//go:build race

package locktest

// raceDetector: the tests are built with -race, which makes each several times as costly in CPU.
const raceDetector = true
