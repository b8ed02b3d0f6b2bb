package cputime

import (
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tick := time.Second / userHZ
	for _, tc := range []struct {
		name, text string
		cpus       int
		notBusy    time.Duration
		err        string
	}{
		{"idle and iowait", "cpu  100 20 30 5000 40 1 2 3 7 8\ncpu0 1 2 3 4 5 6 7 8 9 10\n", 1, (5000 + 40) * tick, ""},
		{"two CPUs, then other lines", "cpu 1 1 1 1 1 1 1 1\ncpu0 1 1 1 1 1 1 1 1\ncpu1 0 0 0 0 0 0 0 0\nintr 5 0\nctxt 9\n", 2, 2 * tick, ""},
		{"five counters (Linux 2.6.0)", "cpu 1 1 1 7 2\ncpu0 1 1 1 7 2\n", 1, 9 * tick, ""},
		{"busy machine", "cpu 900 9 90 0 0 5 5 0 0 0\ncpu0 0\n", 1, 0, ""},
		{"per-core line first", "cpu0 1 2 3 4 5 6 7 8\n", 0, 0, "not the aggregate"},
		{"empty", "", 0, 0, "not the aggregate"},
		{"too few", "cpu 1 2 3 4\ncpu0 1\n", 0, 0, "4 counters on the cpu line, want at least 5"},
		{"no per-CPU line", "cpu 1 2 3 4 5 6 7 8\nintr 1\n", 0, 0, "no per-CPU"},
		{"cpu line without a number", "cpu 1 2 3 4 5 6 7 8\ncpux 1\n", 0, 0, "no per-CPU"},
		{"not a number", "cpu 1 2 3 x 5 6 7 8\ncpu0 1\n", 0, 0, `counter 4: "x"`},
		{"negative", "cpu 1 2 3 4 -5 6 7 8\ncpu0 1\n", 0, 0, "counter 5"},
		{"overflow", "cpu 1 1 1 18446744073709551615 1 1 1 1\ncpu0 1\n", 0, 0, "overflows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tc.text))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case got.CPUs != tc.cpus || got.Idle != tc.notBusy:
				t.Fatalf("%d CPUs, %v not busy; want %d, %v", got.CPUs, got.Idle, tc.cpus, tc.notBusy)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration, cpus int, notBusy time.Duration) MachineSample {
		return MachineSample{At: t0.Add(d), CPUs: cpus, Idle: notBusy}
	}
	for _, tc := range []struct {
		name string
		a, b MachineSample
		want time.Duration
		err  bool
	}{
		{"half busy", at(0, 2, 10*time.Second), at(time.Second, 2, 11*time.Second), time.Second, false},
		{"idle", at(0, 2, 0), at(time.Second, 2, 2*time.Second), 0, false},
		{"all busy", at(0, 4, 5*time.Second), at(time.Second, 4, 5*time.Second), 4 * time.Second, false},
		{"idle went back", at(0, 2, 10*time.Second), at(time.Second, 2, 9*time.Second), 2 * time.Second, false},
		{"more idle than wall", at(0, 2, 0), at(time.Second, 2, 3*time.Second), 0, false},
		{"CPUs changed", at(0, 2, 0), at(time.Second, 3, 0), 0, true},
		{"no CPUs", at(0, 0, 0), at(time.Second, 0, 0), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Busy(tc.a, tc.b)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Busy = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestMachineCountsWork: where /proc/stat exists, spinning adds busy
// time to the machine's total (other tenants can only add more).
func TestMachineCountsWork(t *testing.T) {
	start, err := Machine()
	if err != nil {
		t.Skipf("no machine CPU time here: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		now, err := Machine()
		if err != nil {
			t.Fatal(err)
		}
		busy, err := Busy(start, now)
		if err != nil {
			t.Fatal(err)
		}
		if busy >= 50*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s of spinning added under 50 ms of machine CPU time")
		}
	}
}

// TestMachineCoversProcess: the machine's busy time includes this
// process's, whatever the other tenants do. Work in bursts shorter than a
// scheduler tick with sleeps between, as a packet relay works, is what
// /proc/stat's sampled busy counters miss on a partly idle machine.
func TestMachineCoversProcess(t *testing.T) {
	a, err := Machine()
	if err != nil {
		t.Skipf("no machine CPU time here: %v", err)
	}
	p0 := Process()
	if p0 <= 0 {
		t.Skip("no process CPU time on this platform")
	}
	const work = 200 * time.Millisecond
	deadline := time.Now().Add(20 * time.Second)
	for Process()-p0 < work && time.Now().Before(deadline) {
		spinFor(300 * time.Microsecond)
		time.Sleep(time.Millisecond)
	}
	proc := Process() - p0
	b, err := Machine()
	if err != nil {
		t.Fatal(err)
	}
	busy, err := Busy(a, b)
	if err != nil {
		t.Fatal(err)
	}
	// slack: each reading's idle counter is truncated to a 10 ms tick
	const slack = 2 * 10 * time.Millisecond
	if busy+slack < proc {
		t.Fatalf("the machine was busy %v while this process alone used %v of CPU", busy, proc)
	}
}

// spinFor burns CPU for d of wall time.
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// FuzzParseProcStat: any text gives a non-negative idle time on at least
// one CPU, or a one-line error.
func FuzzParseProcStat(f *testing.F) {
	f.Add("cpu  12146 1457 4613 20075 488 0 206 1310 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	f.Add("cpu 1 2 3")
	f.Add("cpu 1 2 3 4 5 6 7 8\ncpu0 1\ncpu1 1\ncpu2x 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseProcStat([]byte(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if s.Idle < 0 || s.CPUs < 1 {
			t.Fatalf("%d CPUs, %v not busy", s.CPUs, s.Idle)
		}
	})
}

// TestSampleRetakesASlowRead: a read preempted between the counters and
// the clock is taken again, and the sample is timed at the middle of the
// read it keeps.
func TestSampleRetakesASlowRead(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clock := t0
	// each read takes this long; the first was preempted
	spans := []time.Duration{40 * time.Millisecond, 50 * time.Microsecond}
	texts := []string{"cpu 0 0 0 100 0 0 0 0\ncpu0 0\n", "cpu 0 0 0 900 0 0 0 0\ncpu0 0\n"}
	reads := 0
	read := func() ([]byte, error) {
		clock = clock.Add(spans[reads])
		reads++
		return []byte(texts[reads-1]), nil
	}
	s, err := sample(read, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	wantAt := t0.Add(40*time.Millisecond + 25*time.Microsecond)
	if reads != 2 || s.Idle != 9*time.Second || !s.At.Equal(wantAt) {
		t.Fatalf("%d reads, %v not busy at %v; want 2, 9s at %v", reads, s.Idle, s.At.Sub(t0), wantAt.Sub(t0))
	}
}

// TestSampleGivesUp: a machine that preempts every read still gets a
// sample, after maxReads tries.
func TestSampleGivesUp(t *testing.T) {
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	reads := 0
	read := func() ([]byte, error) {
		clock = clock.Add(time.Second)
		reads++
		return []byte("cpu 0 0 0 1 0 0 0 0\ncpu0 0\n"), nil
	}
	if _, err := sample(read, func() time.Time { return clock }); err != nil || reads != maxReads {
		t.Fatalf("%d reads, %v; want %d, no error", reads, err, maxReads)
	}
}

// TestBusyCoversRecordedTasks replays a second of this project's 2-core
// VM, partly idle (2026-11-30 about 00:29 UTC, load 10), as a sampler at
// real-time priority read it (no delay between its reads of /proc/stat,
// the clock and the root cgroup's cpuacct.usage, the scheduler's exact
// run time of every task): the counters' changes, in ticks (it kept the
// busy ones' sum, not how user and system split it), and the tasks' time.
// The machine's busy time must hold every task's; /proc/stat's busy
// counters, the measure before Busy, rose 1.45 s.
func TestBusyCoversRecordedTasks(t *testing.T) {
	before := "cpu 0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n"
	after := "cpu 145 0 0 42 3 0 0 0 0 0\ncpu0 73 0 0 21 1 0 0 0 0 0\ncpu1 72 0 0 21 2 0 0 0 0 0\n"
	const tasks = 1525 * time.Millisecond
	a, err := ParseProcStat([]byte(before))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseProcStat([]byte(after))
	if err != nil {
		t.Fatal(err)
	}
	a.At = time.Date(2026, 11, 30, 0, 30, 0, 0, time.UTC)
	b.At = a.At.Add(1000500 * time.Microsecond)
	busy, err := Busy(a, b)
	if err != nil {
		t.Fatal(err)
	}
	// slack: the idle counters' 10 ms ticks, once per reading
	if busy+20*time.Millisecond < tasks {
		t.Fatalf("machine busy %v, but its tasks ran %v", busy, tasks)
	}
}
