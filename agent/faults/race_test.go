//go:build race

package faults

// raceEnabled: under the race detector fifteen agents at once are too slow
// for their transfers' deadlines; .ci/run runs TestFaultMatrix without it.
const raceEnabled = true
