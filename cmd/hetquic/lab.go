package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/emu/lab"
)

func init() {
	register(command{
		name:    "lab",
		summary: "root lab: client and server network namespaces joined through the emulator (up, exec, down)",
		run:     runLab,
	})
}

var labSubcommands = []subcommand{
	{"up", "build the lab for a scenario and run it until Ctrl-C", labUp},
	{"exec", "run a program inside the lab's client or server namespace", labExec},
	{"down", "stop a lab and remove everything it made (also after a crash)", labDown},
}

func runLab(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "lab", "The root lab: client and server network namespaces joined through the emulator; needs root (emu/lab/README.md).", labSubcommands, args)
}

func labUp(ctx context.Context, args []string) error {
	fs := newFlagSet("lab up", "lab up SCENARIO [--name N] [--seed S] [--control ADDR] [flags]", `
Build a client network namespace (hq-N-c) with one interface per scenario
path, named after the path, and a server namespace (hq-N-s), joined through
the userspace emulator by TUN devices; then move packets through the
scenario's links until Ctrl-C or SIGTERM, and remove everything.

Client path i (0-based) has address 10.200.<i+1>.2; a socket bound to it
uses that path (source-based policy routing), an unbound one path 0. The
server is 10.201.0.1 over every path. Every client address is a kernel MPTCP
subflow endpoint. Run programs inside with "hetquic lab exec". A lab of the
same name left by a crash is removed first. Needs root.`)
	name := fs.String("name", lab.DefaultName, "lab name (1-16 of a-z 0-9 _)")
	seed := fs.Uint64("seed", 1, "seed of the links' random sources")
	control := fs.String("control", "", "serve the emulator's control API here: 127.0.0.1:PORT or unix:PATH (empty: none)")
	logFile := fs.String("log", "", "write a per-packet CSV event log to this file")
	noEvents := fs.Bool("no-events", false, "do not run the scenario's timed events (apply them through the control API)")
	mtu := fs.Int("mtu", lab.DefaultMTU, "MTU of the lab's interfaces (the largest packet the emulator carries)")
	// The scenario may come before or after the flags.
	var pos []string
	rest := args
	for {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) != 1 {
		return badInput(errors.New("lab up: needs exactly one SCENARIO file"))
	}
	if err := lab.ValidName(*name); err != nil {
		return badInput(err)
	}
	s, err := loadScenarioFile(pos[0])
	if err != nil {
		return badInput(err)
	}
	if err := lab.Available(); err != nil {
		return err
	}
	var csv *emu.CSVLog
	var logCloser io.Closer
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return badInput(fmt.Errorf("--log: %v", err))
		}
		csv, logCloser = emu.NewCSVLog(f), f
	}
	cfg := lab.Config{Name: *name, Scenario: s, Seed: *seed, NoEvents: *noEvents, MTU: *mtu}
	if csv != nil {
		cfg.Log = csv
	}
	l, err := lab.Up(cfg)
	if err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	if *control != "" {
		ln, err := emu.ListenControl(*control)
		if err != nil {
			l.Close()
			return badInput(fmt.Errorf("--control: %v", err))
		}
		go func() {
			serveErr <- emu.ServeControl(ctx, ln, emu.ControlHandler(l.Engine(), func() any { return l.Stats() }))
		}()
	}
	w := os.Stderr
	fmt.Fprintf(w, "hetquic lab: %q up for scenario %s (Ctrl-C to stop and clean up)\n", *name, s.Name)
	fmt.Fprintf(w, "  client namespace %s:", l.ClientNS())
	for i, p := range l.Paths() {
		fmt.Fprintf(w, "  %s=%s", p, lab.ClientAddr(i))
	}
	fmt.Fprintf(w, "\n  server namespace %s: %s (over every path)\n", l.ServerNS(), lab.ServerAddr)
	if *control != "" {
		fmt.Fprintf(w, "  control API on %s (hetquic emu set|outage|stats --control %s)\n", *control, *control)
	}
	if m := l.Stats().MPTCP; m != "" {
		fmt.Fprintf(w, "  MPTCP endpoints not set: %s\n", m)
	}
	fmt.Fprintf(w, "  run programs with: hetquic lab exec client|server --name %s -- CMD ARGS...\n", *name)
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	if cerr := l.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if csv != nil {
		if ferr := csv.Flush(); ferr != nil {
			err = errors.Join(err, fmt.Errorf("--log: %w", ferr))
		}
		logCloser.Close()
	}
	fmt.Fprintf(w, "hetquic lab: %q down\n", *name)
	return err
}

func labExec(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, `Usage: hetquic lab exec client|server [--name N] -- CMD ARGS...

Run CMD inside the client or the server namespace of a running lab (through
"ip netns exec"); hetquic replaces itself with it, so its exit status is the
command's. lab down and the end of lab up kill what is still running inside.`)
		if len(args) == 0 {
			return badInput(errors.New("lab exec: needs client or server and a command"))
		}
		return nil
	}
	fs := newFlagSet("lab exec", "lab exec client|server [--name N] -- CMD ARGS...", "Run CMD inside a lab namespace.")
	name := fs.String("name", lab.DefaultName, "lab name")
	// Flags may come before or after client|server; "--" ends them.
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return badInput(errors.New("lab exec: needs client or server and a command"))
	}
	side := fs.Arg(0)
	if err := parseFlags(fs, fs.Args()[1:]); err != nil {
		return err
	}
	if side != "client" && side != "server" {
		return badInput(fmt.Errorf("lab exec: %q: want client or server", side))
	}
	if fs.NArg() == 0 {
		return badInput(errors.New("lab exec: no command (hetquic lab exec client -- CMD ARGS...)"))
	}
	if err := lab.ValidName(*name); err != nil {
		return badInput(err)
	}
	argv, err := lab.ExecArgs(*name, side, fs.Args())
	if err != nil {
		return err
	}
	return syscall.Exec(argv[0], argv, os.Environ())
}

func labDown(ctx context.Context, args []string) error {
	fs := newFlagSet("lab down", "lab down [--name N]", `
Stop the lab called N: a running "lab up" is asked to stop (SIGTERM) and
cleans up itself; what a crashed one left (its namespaces, with the devices,
routes, rules and MPTCP endpoints in them, and the processes still running
inside) is removed.`)
	name := fs.String("name", lab.DefaultName, "lab name")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return badInput(fmt.Errorf("lab down: unexpected argument %q", fs.Arg(0)))
	}
	if err := lab.ValidName(*name); err != nil {
		return badInput(err)
	}
	found, err := lab.Down(*name)
	if err != nil {
		return err
	}
	if found {
		fmt.Fprintf(os.Stderr, "hetquic lab: %q removed\n", *name)
	} else {
		fmt.Fprintf(os.Stderr, "hetquic lab: %q was not up; nothing to remove\n", *name)
	}
	return nil
}
