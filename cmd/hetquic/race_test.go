//go:build race

package main

// raceEnabled: the race detector slows the simulator 5–10×, so the slow
// golden experiments and the abuse test's memory bound run in
// .ci/run's separate runs without -race instead.
const raceEnabled = true
