package main

import (
	"github.com/hetquic/hetquic/agent/experiments/agentmode"
	"github.com/hetquic/hetquic/experiment"
	"github.com/hetquic/hetquic/experiment/realenv"
	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/ride/report/ridemode"
	simexp "github.com/hetquic/hetquic/sim/exp"
	"github.com/hetquic/hetquic/sim/svc"
)

// The registration list: every mode an experiment file may name, in the
// order help and errors list them. This is the one file of the command that
// names a mode's package (internal/archtest checks it); a new mode is its
// package and a line here, plus its built-in directory below if it has one.
func init() {
	mode.Register(
		experiment.Offline, // the default: a file without mode: or any mode's fields
		experiment.Trace,
		realenv.Mode,
		simexp.Mode,
		agentmode.Mode,
		svc.Mode,
		ridemode.Mode,
	)
}

// builtinDirs are where the built-in experiments live in hetquic.Files.
var builtinDirs = []string{"experiments", "sim/experiments", "sim/svc/experiments"}
