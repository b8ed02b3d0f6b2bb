package main

import (
	"github.com/hetquic/hetquic/agent/runner/agentmode"
	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/ride/report/ridemode"
	"github.com/hetquic/hetquic/runner"
	"github.com/hetquic/hetquic/runner/realenv"
	"github.com/hetquic/hetquic/sim/layeredvideo"
	simrunner "github.com/hetquic/hetquic/sim/runner"
)

// The registration list: every mode an experiment file may name, in the
// order help and errors list them. This is the one file of the command that
// names a mode's package (internal/archtest checks it); a new mode is its
// package and a line here, plus its built-in directory below if it has one.
func init() {
	mode.Register(
		runner.Offline, // the default: a file without mode: or any mode's fields
		runner.Trace,
		realenv.Mode,
		simrunner.Mode,
		agentmode.Mode,
		layeredvideo.Mode,
		ridemode.Mode,
	)
}

// modeSummaries is each registered mode in exp -h (TestExpHelpListsEveryMode
// fails on a mode without one).
var modeSummaries = map[string]string{
	"offline": "strategies × seeds × rounds on the scenario's TCT model (pathsel)",
	"trace":   "the same over a recorded trace",
	"real":    "the same with real HTTP/3 requests by PCM-QUIC through the emulator",
	"sim":     "simulator variants (scheduler, congestion control, path scheme)",
	"agent":   "one of the Cybertwin agent's §V experiments through the emulator",
	"video":   "DASH-SVC video with frame FEC over the simulator: QC-MAB, Peekaboo, LEAP (thesis ch. 4)",
	"ride":    "RIDE's 360° video evaluation against RR, minRTT and Peekaboo (thesis ch. 5)",
}

// builtinDirs are where the built-in experiments live in hetquic.Files.
var builtinDirs = []string{"experiments", "sim/experiments", "sim/layeredvideo/experiments"}
