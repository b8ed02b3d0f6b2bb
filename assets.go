// Package hetquic holds the inputs that ship inside the binary: the built-in
// scenarios, the experiments of every mode and the papers' claims, so
// "hetquic demo", "hetquic exp run NAME" and "hetquic reproduce" work from
// any directory.
package hetquic

import "embed"

//go:generate go run ./cmd/hetquic docs

// Files holds experiments/*.yaml (offline, trace, real and agent),
// sim/experiments/*.yaml (simulator), sim/layeredvideo/experiments/*.yaml (thesis
// ch. 4 video), scenarios/**, claims/*.yaml (the papers' claims that
// "hetquic reproduce" checks) and ride/policies (the trained RIDE actors ride
// experiments name) as in the repository, so the relative paths inside them
// resolve the same way as on disk.
//
//go:embed experiments scenarios sim/experiments sim/layeredvideo/experiments claims ride/policies
var Files embed.FS
