package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/hetquic/hetquic/agent/capacity"
)

func agentCapacity(ctx context.Context, args []string) error {
	fs := newFlagSet("agent capacity", "agent capacity [--devices 100,1000] [--md] [-v]", agentHelp+`

capacity starts a real ct-server process (this binary, default
configuration) on loopback and, for each device count, that many ct-clients
in this process, each with two paths (two QUIC connections from addresses
of its own, keep-alive on). They connect in waves, stay idle, then fetch
small objects at random times. It reports ct-server's RSS per device, the
handshakes it completes per second, its idle CPU and the p99 time to first
byte (BENCHMARKS.md, "ct-server capacity"). It needs about 2.5 MB of this
process's memory and four file descriptors per device.`)
	devices := fs.String("devices", "100,1000", "device counts, comma-separated (each against a fresh ct-server)")
	idle := fs.Duration("idle", capacity.Default.Idle, "how long the devices stay idle before ct-server's RSS is read")
	active := fs.Duration("active", capacity.Default.Active, "how long the devices' apps fetch")
	interval := fs.Duration("interval", capacity.Default.Interval, "mean time between one device's requests")
	md := fs.Bool("md", false, "print BENCHMARKS.md's markdown block (exit 0: failed requests and paths down are in its table)")
	verbose := fs.Bool("v", false, "progress and ct-server's log on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ns, err := parseList(*devices, func(s string, _ int) (int, error) { return strconv.Atoi(s) })
	if err != nil {
		return badInput(fmt.Errorf("agent capacity: --devices: %w", err))
	}
	for _, n := range ns {
		if n > capacity.MaxDevices {
			return badInput(fmt.Errorf("agent capacity: --devices: %d is more than %d", n, capacity.MaxDevices))
		}
	}
	if *idle <= 0 || *active <= 0 || *interval <= 0 {
		return badInput(fmt.Errorf("agent capacity: --idle, --active and --interval must be positive"))
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := capacity.Config{Devices: ns, Idle: *idle, Active: *active, Interval: *interval,
		Server: func(args ...string) *exec.Cmd {
			return exec.Command(exe, append([]string{"agent", "server"}, args...)...)
		}}
	if *verbose {
		cfg.Log = os.Stderr
	}
	rep, err := capacity.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *md {
		rep.Markdown(os.Stdout)
		return nil
	}
	printCapacity(rep)
	for _, r := range rep.Rows {
		if r.Failed > 0 || r.PathsUp < 2*r.Devices || r.Requests == 0 {
			return fmt.Errorf("agent capacity: %d devices: %d failed requests, %d completed, %d of %d paths up", r.Devices, r.Failed, r.Requests, r.PathsUp, 2*r.Devices)
		}
	}
	return nil
}

// printCapacity writes a line per device count.
func printCapacity(rep *capacity.Report) {
	for _, r := range rep.Rows {
		fmt.Printf("%d devices: ct-server RSS %d MiB idle (%d KiB per device), %.0f handshakes/s, %d of %d paths up, %d requests (%d failed), first byte p50 %v p99 %v, peak RSS %d MiB\n",
			r.Devices, r.IdleRSS>>20, r.PerDevice()>>10, r.HandshakesPerSec(), r.PathsUp, 2*r.Devices, r.Requests, r.Failed,
			r.P50.Round(100*time.Microsecond), r.P99.Round(100*time.Microsecond), r.PeakRSS>>20)
	}
}
