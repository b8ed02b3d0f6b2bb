//go:build race

package pcm

// raceEnabled: under the race detector the order in which a synctest
// bubble's goroutines run changes, and with it which path a steady load's
// requests see first; TestBestLivePathUnderLoad's share on the best path
// then fell to 0.45–0.56 in at least 7 of 20 runs (0 of 20 without -race). .ci/run
// runs it without -race.
const raceEnabled = true
