//go:build race

package generate

// raceEnabled builds the end-to-end tests with the race detector when
// these tests run with it.
const raceEnabled = true
