package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// Experiment 2 of the paper's §V: loss sweep.

// LossConfig is experiment 2: each size downloaded alone over one path
// whose downstream loss is set to each rate in turn.
type LossConfig struct {
	Scenario *scenario.Scenario // nil: DefaultScenario
	Path     string             // "": the first path
	Losses   []float64          // fractions (paper: 0, .01, .02, .05)
	Sizes    []int64            // paper: 2.5 MB, 10 MB
	Lanes    int                // QUIC connections on the path (0: 1; agent.Lanes)
	// TCP adds the paper's comparator after each CT row: the same download
	// as HTTPS/1.1 over one fresh TCP connection with TLS 1.2 (handshakes
	// included, as an app without the agent pays them), in the root lab
	// over the same path with the same loss (labHTTPS). RunLoss then fails
	// with an error wrapping ErrNoMPTCP, after every CT row, where the lab
	// cannot run at the first loss rate; a lab lost later is an error (the
	// rows would lose their shape).
	TCP bool
	// TCPCC is the comparator's TCP congestion control ("": the host's).
	TCPCC string
	Seed  uint64
	Log   *slog.Logger
}

// LossRow is one cell of experiment 2: the CT scheme's time (Mode
// LossModeCT) or the comparator's (HTTPS over TCP, Mode naming the
// congestion control).
type LossRow struct {
	Mode      string  `json:"mode"`
	Loss      float64 `json:"loss"`
	SizeBytes int64   `json:"size_bytes"`
	Ms        float64 `json:"ms"`
	IdealMs   float64 `json:"ideal_ms"` // size at the path's rate
	Mbps      float64 `json:"goodput_mbps"`
	// CTOver is, on a comparator row, the CT row's time at the same loss
	// and size over this row's: below 1 the CT scheme finishes sooner (the
	// paper's Fig. 3 compares the two).
	CTOver float64 `json:"ct_over,omitempty"`
}

// LossModeCT is the CT scheme's rows' Mode.
const LossModeCT = "ct agent (QUIC)"

// RunLoss runs experiment 2 through ct-client pinned to one path, and with
// TCP the comparator after it at each loss rate: the rows are per loss,
// per size, the CT row and then the comparator's.
func RunLoss(ctx context.Context, cfg LossConfig) ([]LossRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	one, err := onePath(sc, cfg.Path)
	if err != nil {
		return nil, err
	}
	p := one.Paths[0].Name
	rate := downRate(one, nil)
	row := func(mode string, loss float64, size int64, d time.Duration) LossRow {
		return LossRow{Mode: mode, Loss: loss, SizeBytes: size, Ms: stats.Ms(d),
			IdealMs: float64(size) / rate * 1000, Mbps: float64(size) * 8 / d.Seconds() / 1e6}
	}
	var out []LossRow
	var noTCP error // why the comparator cannot run here
	for _, loss := range cfg.Losses {
		patch, err := scenario.ParsePatch(fmt.Sprintf("{down: {loss: %g}}", loss))
		if err != nil {
			return out, err
		}
		ct, err := lossCT(ctx, cfg, sc, p, patch)
		if err != nil {
			return out, fmt.Errorf("loss %g: %w", loss, err)
		}
		var tcp []time.Duration
		var cc string
		if cfg.TCP && noTCP == nil {
			tcp, cc, err = lossHTTPS(ctx, cfg, one, patch)
			switch {
			case errors.Is(err, ErrNoMPTCP) && len(out) == 0:
				noTCP = err // no lab here: CT rows only, every loss alike
			case err != nil:
				return out, fmt.Errorf("loss %g: %w", loss, err)
			}
		}
		for i, size := range cfg.Sizes {
			c := row(LossModeCT, loss, size, ct[i])
			out = append(out, c)
			if tcp != nil {
				h := row(fmt.Sprintf("HTTPS/1.1, TCP %s + TLS 1.2 (lab)", cc), loss, size, tcp[i])
				h.CTOver = c.Ms / h.Ms
				out = append(out, h)
			}
		}
	}
	return out, noTCP
}

// lossCT downloads each size, one after the other, through a fresh agent
// over path p of sc with patch applied to the relay.
func lossCT(ctx context.Context, cfg LossConfig, sc *scenario.Scenario, p string, patch *scenario.Patch) ([]time.Duration, error) {
	e, err := newEnv(ctx, envConfig{Scenario: sc, Paths: []string{p}, Lanes: cfg.Lanes, Seed: cfg.Seed, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if err := e.relay.Engine().Apply(p, patch); err != nil {
		return nil, err
	}
	var ds []time.Duration
	for _, size := range cfg.Sizes {
		f, err := e.get(ctx, "app", size)
		if err != nil {
			return nil, err
		}
		ds = append(ds, f.Dur)
	}
	return ds, nil
}

// lossHTTPS downloads each size over its own fresh HTTPS/1.1 connection
// (TCP + TLS 1.2, the handshakes included) in a fresh lab over the
// one-path scenario one with patch applied to the lab's engine, and names
// the congestion control the server's socket ran.
func lossHTTPS(ctx context.Context, cfg LossConfig, one *scenario.Scenario, patch *scenario.Patch) ([]time.Duration, string, error) {
	h, err := startLabHTTPS(ctx, one, cfg.Seed, cfg.TCPCC)
	if err != nil {
		return nil, "", err
	}
	defer h.Close()
	if err := h.lab.Engine().Apply(one.Paths[0].Name, patch); err != nil {
		return nil, "", err
	}
	var ds []time.Duration
	for _, size := range cfg.Sizes {
		d, err := h.client(size, tls.VersionTLS12).round(ctx, 1)
		if err != nil {
			return nil, "", err
		}
		ds = append(ds, d[0])
	}
	return ds, h.cc, nil
}
