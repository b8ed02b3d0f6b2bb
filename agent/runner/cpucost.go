package runner

import (
	"time"

	"github.com/hetquic/hetquic/internal/cputime"
)

// The CPU cost of moving a transfer's bytes, two ways:
//
//   - process: this process's user + system time. For ct that is
//     everything the transfer runs on: ct-client, ct-server, the emulator
//     relay, the app and the app-server all run in this process. For
//     kernel MPTCP it is the app, the app-server and the lab's emulator
//     (emu/lab moves every packet between TUNs in this process) with
//     their syscalls, but not the kernel's TCP and MPTCP work, which runs
//     mostly in softirq, charged to no process.
//   - machine: the whole machine's busy time (every core, interrupts and
//     softirq included): the cores' wall time less the time /proc/stat
//     says they sat idle (cputime.Busy says why not its busy counters).
//     It counts both modes' work the same way, the emulator's included
//     for both, and every other tenant's: it means something only on an
//     otherwise idle machine, so read it with the run's load line.
//
// Costs are in CPU seconds per GB (10^9 bytes), 0 where not measured.

// cpuUse is the CPU one transfer took, process and machine (0: unknown).
type cpuUse struct{ proc, machine time.Duration }

// cpuMeter is a running CPU measurement: the readings at its start.
type cpuMeter struct {
	proc      time.Duration
	machine   cputime.MachineSample
	machineOK bool
}

// startCPU starts measuring; stop ends it.
func startCPU() cpuMeter {
	m, err := cputime.Machine()
	return cpuMeter{proc: cputime.Process(), machine: m, machineOK: err == nil}
}

// stop is the CPU used since startCPU; a reading the platform cannot take
// stays 0.
func (c cpuMeter) stop() cpuUse {
	var u cpuUse
	if c.proc > 0 {
		u.proc = cputime.Process() - c.proc
	}
	if m, err := cputime.Machine(); err == nil && c.machineOK {
		u.machine, _ = cputime.Busy(c.machine, m) // 0 if the CPUs changed
	}
	return u
}

// perGB is cpu spent on n bytes in CPU seconds per GB; 0 when there were
// no bytes or no measurement.
func perGB(cpu time.Duration, n int64) float64 {
	if n <= 0 || cpu <= 0 {
		return 0
	}
	return cpu.Seconds() / (float64(n) / 1e9)
}

// costRatio is a / b (ct's cost over MPTCP's), 0 when either is unknown.
func costRatio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}
