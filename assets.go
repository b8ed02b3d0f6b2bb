// Package hetquic holds the inputs that ship inside the binary: the built-in
// scenarios, experiments and claims, so "hetquic demo" and "hetquic exp run NAME"
// work from any directory.
package hetquic

import "embed"

//go:generate go run ./cmd/hetquic docs

// Files holds experiments/*.yaml, scenarios/** and claims/*.yaml (the papers'
// claims that "hetquic reproduce" checks) as in the repository, so the
// relative paths inside them resolve the same way as on disk.
//
//go:embed experiments scenarios claims
var Files embed.FS
