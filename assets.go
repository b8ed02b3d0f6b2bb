// Package hetquic holds the inputs that ship inside the binary: the built-in
// scenarios and experiments, so "hetquic demo" and "hetquic exp run NAME"
// work from any directory.
package hetquic

import "embed"

// Files holds experiments/*.yaml and scenarios/** as in the repository, so
// the relative paths inside them resolve the same way as on disk.
//
//go:embed experiments scenarios
var Files embed.FS
