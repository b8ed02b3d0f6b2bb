//go:build !unix

package cputime

import "time"

// Process is 0 where the platform has no getrusage.
func Process() time.Duration { return 0 }
