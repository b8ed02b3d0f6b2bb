//go:build race

package agent

// raceEnabled: under the race detector the order in which a synctest
// bubble's goroutines run changes, and a striped transfer's time with it
// (TestStripeNeverBelowBestPath's 1:10 row failed at 1.07 × the best path
// alone in CI's test command), and the mix test takes over a minute
// instead of 7–16 s. .ci/run runs it without -race.
const raceEnabled = true
