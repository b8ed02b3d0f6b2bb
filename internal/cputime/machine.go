package cputime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, which the kernel
// fixes at 100 ticks a second in its user ABI whatever its own HZ.
const userHZ = 100

// The machine's busy time is not read from /proc/stat's busy counters
// (user, system, irq, softirq). On a tick-accounted kernel those are
// samples: a whole tick goes to whatever runs when the tick fires, and
// nothing where no tick fires, as when a CPU back from idle sleeps again
// within the tick. On this project's 2-core VM (NO_HZ_IDLE, HZ 250, tick
// accounting), 10-50 % idle, they fell some 75 ms a second short of the
// wall time, reading 4-6 % below the scheduler's exact task time (the
// root cgroup's cpuacct.usage), so a process's exact CPU time (Process)
// could read above the whole machine's (agent/RESULTS.md, "CPU per
// byte"). The idle and iowait counters of a NO_HZ kernel are not
// samples: the kernel clocks each idle period (an interrupt taken while
// idle ends it, so interrupt and softirq work counts as busy). Busy is
// therefore the wall time on every CPU less those, which agreed with
// cpuacct.usage to 1-2 % (the rest: interrupts while idle, which no task
// is charged for).
//
// Steal (time the hypervisor ran something else while this machine's CPU
// wanted to run) stays in: it is not this machine's work, but the kernel
// charges it to /proc/stat in lumps, a tick's worth at a tick, while the
// scheduler takes it out of the tasks' time as it happens. Taken out, one
// second with 100 ms of steal charged read 71 ms below the tasks' exact
// time.

// procStatIdle are the indices, among a "cpu" line's fields, of the time
// the CPUs sat idle: idle and iowait (idle with I/O pending).
var procStatIdle = []int{3, 4}

// MachineSample is one reading of the machine's CPU counters: how many
// CPUs it has and how long, summed over them, they sat idle (see
// procStatIdle) since boot, taken at At.
type MachineSample struct {
	At   time.Time
	CPUs int
	Idle time.Duration
}

// Machine reads the machine's CPU counters now. It fails where there is
// no Linux /proc/stat.
func Machine() (MachineSample, error) {
	return sample(func() ([]byte, error) { return os.ReadFile("/proc/stat") }, time.Now)
}

// sample reads the counters with read and times them with now (see
// maxReadSpan).
func sample(read func() ([]byte, error), now func() time.Time) (MachineSample, error) {
	for try := 1; ; try++ {
		before := now()
		data, err := read()
		after := now()
		if err != nil {
			return MachineSample{}, err
		}
		if span := after.Sub(before); span <= maxReadSpan || try == maxReads {
			s, err := ParseProcStat(data)
			s.At = before.Add(span / 2)
			return s, err
		}
	}
}

// A sample's time is only as sure as its read was short: a reader
// preempted between reading the counters and the clock (over 100 ms at
// load 15 here) would be off by that much on every CPU, which Busy would
// count as work or as idle. A read that took longer than maxReadSpan
// (reading takes about 20 µs) is taken again, up to maxReads times.
const (
	maxReadSpan = time.Millisecond
	maxReads    = 20
)

// Busy is the busy CPU time of the whole machine between a and b, summed
// over every core: every process's user and system time, the time the
// kernel spends in interrupts and softirq (where it runs TCP, MPTCP and
// qdiscs such as netem on behalf of nobody) and steal. It counts every
// tenant's work, so it means something only on an otherwise idle
// machine. It is the CPUs' wall time less the time they sat idle (see the
// comment above procStatIdle), kept within 0 and the wall time (idle
// counters have gone backwards on some kernels); an error if the CPU
// count changed.
func Busy(a, b MachineSample) (time.Duration, error) {
	if a.CPUs != b.CPUs || a.CPUs <= 0 {
		return 0, fmt.Errorf("the machine's CPUs changed from %d to %d", a.CPUs, b.CPUs)
	}
	wall := time.Duration(a.CPUs) * b.At.Sub(a.At)
	busy := wall - (b.Idle - a.Idle)
	return max(0, min(busy, wall)), nil
}

// ParseProcStat reads a MachineSample (At not set) from the text of
// /proc/stat: its first line, "cpu" and at least five counters in ticks,
// and one "cpuN" line per CPU.
func ParseProcStat(data []byte) (MachineSample, error) {
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) == 0 || string(fields[0]) != "cpu" {
		return MachineSample{}, errors.New("/proc/stat: the first line is not the aggregate \"cpu\" line")
	}
	counters := fields[1:]
	if len(counters) < procStatIdle[len(procStatIdle)-1]+1 {
		return MachineSample{}, fmt.Errorf("/proc/stat: %d counters on the cpu line, want at least %d", len(counters), procStatIdle[len(procStatIdle)-1]+1)
	}
	var ticks uint64
	for _, i := range procStatIdle {
		v, err := strconv.ParseUint(string(counters[i]), 10, 64)
		if err != nil {
			return MachineSample{}, fmt.Errorf("/proc/stat: counter %d: %q is not a tick count", i+1, counters[i])
		}
		if ticks+v < ticks || ticks+v > maxTicks {
			return MachineSample{}, fmt.Errorf("/proc/stat: idle time overflows at counter %d", i+1)
		}
		ticks += v
	}
	cpus := countCPULines(rest)
	if cpus == 0 {
		return MachineSample{}, errors.New("/proc/stat: no per-CPU \"cpuN\" line")
	}
	return MachineSample{CPUs: cpus, Idle: time.Duration(ticks) * (time.Second / userHZ)}, nil
}

// countCPULines counts the "cpuN" lines at the start of text (the kernel
// writes one per online CPU right after the aggregate line).
func countCPULines(text []byte) int {
	n := 0
	for len(text) > 0 {
		var line []byte
		line, text, _ = bytes.Cut(text, []byte("\n"))
		name, _, _ := bytes.Cut(line, []byte(" "))
		digits, ok := bytes.CutPrefix(name, []byte("cpu"))
		if !ok || len(digits) == 0 {
			break
		}
		if _, err := strconv.ParseUint(string(digits), 10, 32); err != nil {
			break
		}
		n++
	}
	return n
}

// maxTicks is the most ticks a time.Duration holds (about 292 years).
const maxTicks = uint64(1<<63-1) / uint64(time.Second/userHZ)
