package realenv

import (
	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/runner"
)

// Mode is mode real (internal/mode): experiment's runs, each a real HTTP/3
// request through the emulator, and each point's offline twin beside them.
// It lives here, not in experiment, so that an offline run links no quic-go.
var Mode mode.Mode = runner.NewMode(runner.ModeReal, NewEnv, AddOffline)
