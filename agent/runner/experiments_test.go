package runner

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/citest"
	"github.com/hetquic/hetquic/scenario"
)

// TestAggregation runs experiment 3 end to end through the emulator: four
// rows, every transfer complete, and none faster than the paths' summed rate
// allows (load can slow a run, never speed it up). Whether aggregation beats
// one path is a speed, which real time on a shared machine cannot decide:
// agent's TestStripeNeverBelowBestPath checks it on fake time, and
// `hetquic agent experiment aggregate` measures it (agent/RESULTS.md).
func TestAggregation(t *testing.T) {
	if testing.Short() {
		t.Skip("3.5 MB transfers through the emulator (~10 s); runs without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Two lossless 10 Mbit/s paths (the big object is striped, > 2 MiB).
	link := scenario.Link{DelayMs: 15, RateMbps: 10, QueueBytes: 250_000}
	sc := &scenario.Scenario{Name: "agg-test", Paths: []scenario.Path{
		{Name: "a", Up: scenario.Link{DelayMs: 15}, Down: link},
		{Name: "b", Up: scenario.Link{DelayMs: 15}, Down: link},
	}}
	rows, err := RunAggregation(ctx, AggConfig{Scenario: sc, Big: 3_000_000, Small: 500_000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, rows)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	// The emulator serialises exactly at the rate; 5 % covers the
	// headers and timer granularity.
	const physicsSlack = 0.95
	for _, r := range rows {
		if !(r.MakespanMs >= physicsSlack*r.IdealMs) || r.MakespanMs < r.BigMs || r.MakespanMs < r.SmallMs {
			t.Errorf("%s: makespan %.0f ms, big %.0f ms, small %.0f ms against an ideal of %.0f ms: faster than the links allow or inconsistent",
				r.Mode, r.MakespanMs, r.BigMs, r.SmallMs, r.IdealMs)
		}
	}
}

func TestOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 2 s outage twice (~6 s); runs without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	rows, err := RunOutage(ctx, OutageConfig{Size: 400_000, At: 400 * time.Millisecond, Outage: 2 * time.Second, Seed: 1})
	logRows(t, rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Bytes != 400_000 || rows[1].Bytes != 400_000 {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Migrations < 1 {
		t.Errorf("no migration recorded: %+v", rows[0])
	}
	// Loose: without migration the download waits out the outage.
	if rows[0].AfterCutMs >= rows[1].AfterCutMs {
		t.Errorf("migration %.0f ms not faster than waiting %.0f ms", rows[0].AfterCutMs, rows[1].AfterCutMs)
	}
}

// TestLoss runs experiment 2 at a small size with its comparator: per
// loss rate the CT row, then the HTTPS-over-TCP row naming the congestion
// control it was pinned to, whose ct_over is the CT row's time over its
// own; without the root lab, the CT rows alone and an error saying why.
// Which is faster is a speed this shared machine cannot decide: the
// claims' recorded runs measure it (claims/cybertwin.yaml, loss-*).
func TestLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	losses := []float64{0, 0.05}
	rows, err := RunLoss(ctx, LossConfig{Losses: losses, Sizes: []int64{200_000}, TCP: true, TCPCC: "reno", Seed: 1})
	logRows(t, rows)
	switch {
	case errors.Is(err, ErrNoMPTCP) && len(rows) == len(losses):
		t.Logf("no TCP rows: %v", err)
		for _, r := range rows {
			if r.Mode != LossModeCT || r.Ms <= 0 {
				t.Errorf("row %+v", r)
			}
		}
		return
	case err != nil:
		t.Fatal(err)
	case len(rows) != 2*len(losses):
		t.Fatalf("%d rows, want %d: %+v", len(rows), 2*len(losses), rows)
	}
	for i, loss := range losses {
		ct, tcp := rows[2*i], rows[2*i+1]
		switch {
		case ct.Mode != LossModeCT || ct.Loss != loss || ct.Ms <= 0 || ct.CTOver != 0:
			t.Errorf("CT row %+v", ct)
		case tcp.Mode != "HTTPS/1.1, TCP reno + TLS 1.2 (lab)" || tcp.Loss != loss || tcp.SizeBytes != ct.SizeBytes:
			t.Errorf("comparator row %+v", tcp)
		case math.Abs(tcp.CTOver-ct.Ms/tcp.Ms) > 1e-9:
			t.Errorf("ct_over %g, want %g", tcp.CTOver, ct.Ms/tcp.Ms)
		}
	}
}

// TestLossTable: experiment 2's report has a mode column and the CT /
// HTTPS ratio on the comparator rows only, and its JSON the fields the
// claims read (rows[i].ct_over).
func TestLossTable(t *testing.T) {
	rows := []LossRow{
		{Mode: LossModeCT, Loss: 0.02, SizeBytes: 250000, Ms: 900, IdealMs: 800, Mbps: 2.2},
		{Mode: "HTTPS/1.1, TCP cubic + TLS 1.2 (lab)", Loss: 0.02, SizeBytes: 250000, Ms: 1200, IdealMs: 800, Mbps: 1.7, CTOver: 0.75},
	}
	tb := (&Result{Spec: &Spec{}, Rows: rows}).Tables()[0]
	want := []string{"mode", "loss %", "bytes", "ms", "ideal ms", "goodput Mbit/s", "CT ms / this ms"}
	if strings.Join(tb.Header, "|") != strings.Join(want, "|") {
		t.Fatalf("header %q, want %q", tb.Header, want)
	}
	if got := tb.Rows[0][6]; got != "" {
		t.Errorf("CT row's ratio %q, want empty", got)
	}
	if got := tb.Rows[1][6]; got != "0.75" {
		t.Errorf("comparator row's ratio %q, want 0.75", got)
	}
	if tb.Rows[1][1] != "2" || tb.Rows[1][0] != rows[1].Mode {
		t.Errorf("comparator row %q", tb.Rows[1])
	}
	b, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Count(s, `"ct_over"`) != 1 || !strings.Contains(s, `"mode":"ct agent (QUIC)"`) {
		t.Errorf("JSON %s", s)
	}
}

func TestPrefetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := RunPrefetch(ctx, PrefetchConfig{Size: 200_000, Seed: 1})
	logRows(t, rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !rows[0].Hit || rows[1].Hit {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Ms >= rows[1].Ms {
		t.Errorf("cache hit %.1f ms not faster than on demand %.1f ms", rows[0].Ms, rows[1].Ms)
	}
}

func TestHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := RunHandshake(ctx, HandshakeConfig{Size: 1000, Rounds: 3, TCP: true, Seed: 1})
	logRows(t, rows)
	switch {
	case errors.Is(err, ErrNoMPTCP) && len(rows) == 3:
		t.Logf("no TCP rows: %v", err)
	case err != nil:
		t.Fatal(err)
	case len(rows) != 6 || !strings.Contains(rows[5].Mode, "TLS 1.2"):
		t.Fatalf("rows %+v", rows)
	}
	if len(rows) < 3 {
		t.Fatalf("rows %+v", rows)
	}
	// Loose: a cold HTTP/3 fetch pays a handshake the agent's warm
	// connection does not.
	if rows[0].MinMs >= rows[1].MinMs {
		t.Errorf("agent %.1f ms not faster than cold HTTP/3 %.1f ms", rows[0].MinMs, rows[1].MinMs)
	}
}

func TestAggregationMPTCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := RunAggregationMPTCP(ctx, AggConfig{Big: 600_000, Small: 150_000, Seed: 1})
	if errors.Is(err, ErrNoMPTCP) {
		citest.Skip(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, []AggRow{r})
	if r.MakespanMs <= 0 || r.Efficiency <= 0 {
		t.Fatalf("row %+v", r)
	}
}

func TestMeanAggregation(t *testing.T) {
	rows := []AggRow{
		{Mode: "a", MakespanMs: 100, Efficiency: 0.8},
		{Mode: "b", MakespanMs: 300, Efficiency: 0.4},
		{Mode: "a", MakespanMs: 200, Efficiency: 0.9},
	}
	got := MeanAggregation(rows)
	if len(got) != 2 || got[0].Mode != "a" || got[0].Runs != 2 || got[0].MakespanMs != 150 ||
		math.Abs(got[0].Efficiency-0.85) > 1e-12 || got[1].Runs != 1 || got[1].MakespanMs != 300 {
		t.Fatalf("%+v", got)
	}
}

// logRows logs rows as the report's table.
func logRows(t *testing.T, rows any) {
	t.Helper()
	t.Log("\n" + (&Result{Spec: &Spec{}, Rows: rows}).Tables()[0].Markdown())
}

// TestMatrixRowCPU runs the matrix's first mix end to end at a small size:
// the row's JSON carries the CPU-cost fields, and ct's process cost is
// measured (a transfer through ct takes this process's CPU), and MPTCP
// runs the congestion control asked for. No bound on
// any cost or rate: those are the experiment's to measure.
func TestMatrixRowCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("two ct-client/ct-server pairs and the MPTCP lab (~10 s); runs without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// reno: every Linux has it built in.
	row, notes, err := runMix(ctx, matrixMixes[0], MatrixConfig{Size: 4_000_000, MPTCP: true, MPTCPCC: "reno", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("notes %q", notes)
	logRows(t, []MatrixRow{row})
	data, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ct_process_cpu_s_per_gb", "ct_machine_cpu_s_per_gb", "mptcp_process_cpu_s_per_gb", "mptcp_machine_cpu_s_per_gb", "ct_over_mptcp_machine_cpu"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("matrix row JSON lacks %q: %s", k, data)
		}
	}
	if row.CtProcCPU <= 0 {
		t.Errorf("ct's process CPU cost not measured: %+v", row)
	}
	if row.MPTCP > 0 && row.MPTCPCPU > 0 && row.CtCPU > 0 && row.CPURatio <= 0 {
		t.Errorf("both machine costs measured but no ratio: %+v", row)
	}
	if row.MPTCP > 0 && row.MPTCPCC != "reno" {
		t.Errorf("MPTCP ran with congestion control %q, asked for reno: %+v", row.MPTCPCC, row)
	}
}
