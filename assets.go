// Package hetquic holds the inputs that ship inside the binary: the built-in
// scenarios and experiments of every mode, so "hetquic demo" and "hetquic
// exp run NAME" work from any directory.
package hetquic

import "embed"

// Files holds experiments/*.yaml (offline, trace, real and agent),
// sim/experiments/*.yaml (simulator), scenarios/** and ride/policies (the
// trained RIDE actors ride experiments name) as in the repository,
// so the relative paths inside them resolve the same way as on disk.
//
//go:embed experiments scenarios sim/experiments ride/policies
var Files embed.FS
