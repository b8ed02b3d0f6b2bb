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

// procStatBusy are the indices, among the aggregate "cpu" line's fields,
// of the busy times: user, nice, system, irq, softirq, steal. Idle and
// iowait are not work; guest and guest_nice are already inside user and
// nice.
var procStatBusy = []int{0, 1, 2, 5, 6, 7}

// Machine is the busy CPU time of the whole machine since boot, summed
// over every core: every process's user and system time and the time the
// kernel spends in interrupts and softirq (where it runs TCP, MPTCP and
// qdiscs such as netem on behalf of nobody). It is meaningful as the
// difference of two readings on an otherwise idle machine: it counts
// every tenant's work. It fails where there is no Linux /proc/stat.
func Machine() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return ParseProcStat(data)
}

// ParseProcStat reads the busy time (see Machine) from the text of
// /proc/stat: its first line, "cpu" and at least eight counters in ticks.
func ParseProcStat(data []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) == 0 || string(fields[0]) != "cpu" {
		return 0, errors.New("/proc/stat: the first line is not the aggregate \"cpu\" line")
	}
	counters := fields[1:]
	if len(counters) < procStatBusy[len(procStatBusy)-1]+1 {
		return 0, fmt.Errorf("/proc/stat: %d counters on the cpu line, want at least 8", len(counters))
	}
	var ticks uint64
	for _, i := range procStatBusy {
		v, err := strconv.ParseUint(string(counters[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: counter %d: %q is not a tick count", i+1, counters[i])
		}
		if ticks+v < ticks || ticks+v > maxTicks {
			return 0, fmt.Errorf("/proc/stat: busy time overflows at counter %d", i+1)
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// maxTicks is the most ticks a time.Duration holds (about 292 years).
const maxTicks = uint64(1<<63-1) / uint64(time.Second/userHZ)
