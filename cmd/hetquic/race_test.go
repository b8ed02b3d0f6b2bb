//go:build race

package main

// raceEnabled: the race detector slows the simulator 5–10×, so the slow
// golden experiments run in .ci/run's separate run without -race instead.
const raceEnabled = true
