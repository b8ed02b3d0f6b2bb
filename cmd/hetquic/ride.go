package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hetquic/hetquic/ride/env"
)

func init() {
	register(command{name: "ride", summary: "RIDE 360° tile scheduling (thesis ch. 5): env server for gymnasium, evaluation", run: runRide})
}

const rideHelp = `RIDE schedules each viewed tile of a 360° video on a path of an LTE + Wi-Fi
multipath QUIC connection, or skips it (thesis chapter 5). hetquic simulates
the network; Python (python/, package hetquic_rl) trains the policy with PPO
through "ride env" and exports it for "ride eval". See docs/ride.md.`

func runRide(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "ride", rideHelp, []subcommand{
		{"env", "serve the environment on stdin/stdout (JSON lines, protocol " + env.ProtocolVersion + ")", rideEnv},
	}, args)
}

func rideEnv(_ context.Context, args []string) error {
	fs := newFlagSet("ride env", "ride env", `Serves one episode at a time over stdin/stdout, one JSON request and one
JSON response per line:
  {"op":"spec"}  {"op":"reset","seed":S,"video":V,"frames":F}  {"op":"step","action":A}  {"op":"close"}
A is -1 (skip the tile) or a path index. A bad request is answered
{"error":"..."} and the server goes on. docs/ride.md has the details.`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("ride env: unexpected argument %q", fs.Arg(0)))
	}
	return (&env.Server{}).Serve(os.Stdin, os.Stdout)
}
