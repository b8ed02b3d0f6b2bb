package studies

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/sim"
)

// ns3LossRegime is ns-3 3.37's side of the loss-regime table, written by
// bench/ns3/lossregime.sh (tcp,delack,loss,seed,fct_s).
//
//go:embed ns3ref/lossregime.csv
var ns3LossRegime []byte

// Loss-regime setting, identical on both sides (bench/ns3/lossregime.cc):
// one 10 Mbit/s, 20 ms link each way, a 100-packet drop-tail queue,
// Bernoulli loss on the data direction only, 10 MB, 1448-byte payloads.
const (
	lossRegimeBytes = 10_000_000
	lossRegimeSeeds = 5
)

// lossRegimeLosses are the table's loss rates.
var lossRegimeLosses = []float64{0, 0.001, 0.005, 0.01, 0.02}

// LossRegimePair is one like-for-like comparison: an ns-3 TCP variant and
// ACK policy against the simulator's controller and ACK policy.
type LossRegimePair struct {
	NS3TCP    string // TcpNewReno or TcpLinuxReno
	NS3DelAck int    // DelAckCount
	CC        string // the simulator's controller
	AckEvery  int
	Why       string
}

// LossRegimePairs are the table's rows per loss rate: ns-3's NewReno grows
// per ACK (newreno-ns3 does too), LinuxReno per segment acknowledged
// (RFC 9002's NewReno grows per byte); each under both ACK policies, ACK
// every packet and every second packet (quic-go's, and ns-3's DelAckCount
// default). The last row is the unlike comparison (+60 %).
var LossRegimePairs = []LossRegimePair{
	{"TcpNewReno", 1, "newreno-ns3", 1, "per-ACK growth, ACK every packet"},
	{"TcpNewReno", 2, "newreno-ns3", 2, "per-ACK growth, ACK every 2nd packet"},
	{"TcpLinuxReno", 1, "newreno", 1, "per-byte growth, ACK every packet"},
	{"TcpLinuxReno", 2, "newreno", 2, "per-byte growth, ACK every 2nd packet (quic-go)"},
	{"TcpNewReno", 2, "newreno", 2, "unlike: per-byte vs per-ACK growth"},
}

// LossRegimeRow is one (pair, loss) of the table: median completion times
// over the seeds.
type LossRegimeRow struct {
	Pair       LossRegimePair
	Loss       float64
	NS3S, SimS float64
}

// LossRegime runs the simulator's side and pairs it with ns-3's.
func LossRegime(ctx context.Context) ([]LossRegimeRow, error) {
	ref, err := readNS3LossRegime(ns3LossRegime)
	if err != nil {
		return nil, err
	}
	var rows []LossRegimeRow
	for _, p := range LossRegimePairs {
		for _, loss := range lossRegimeLosses {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			key := fmt.Sprintf("%s,%d,%g", p.NS3TCP, p.NS3DelAck, loss)
			ns3, ok := ref[key]
			if !ok {
				return nil, fmt.Errorf("ns3ref/lossregime.csv: no rows for %s", key)
			}
			var fcts []float64
			for seed := uint64(1); seed <= lossRegimeSeeds; seed++ {
				f, err := lossRegimeRun(seed, loss, p.CC, p.AckEvery)
				if err != nil {
					return nil, err
				}
				fcts = append(fcts, f)
			}
			rows = append(rows, LossRegimeRow{Pair: p, Loss: loss, NS3S: stats.Median(ns3), SimS: stats.Median(fcts)})
		}
	}
	return rows, nil
}

// lossRegimeRun is one simulated transfer; it returns the completion time in s.
func lossRegimeRun(seed uint64, loss float64, ccName string, ackEvery int) (float64, error) {
	s := sim.New(seed)
	fwd := sim.NewLink(s, "fwd", sim.LinkParams{Delay: 20 * time.Millisecond, RateBps: 10e6, QueuePkts: 100, Loss: loss})
	rev := sim.NewLink(s, "rev", sim.LinkParams{Delay: 20 * time.Millisecond, RateBps: 10e6, QueuePkts: 100})
	done, err := transferTime(s, sim.ConnConfig{CC: ccName, AckEvery: ackEvery},
		[]sim.PathSpec{{Name: "p", Fwd: []*sim.Link{fwd}, Rev: []*sim.Link{rev}}}, lossRegimeBytes, time.Hour)
	if err != nil {
		return 0, err
	}
	if done == 0 {
		return 0, fmt.Errorf("loss regime: %s, loss %g, seed %d did not complete", ccName, loss, seed)
	}
	return done.Seconds(), nil
}

// readNS3LossRegime parses the reference CSV into completion times per
// "tcp,delack,loss".
func readNS3LossRegime(data []byte) (map[string][]float64, error) {
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") && l != "" {
			lines = append(lines, l)
		}
	}
	r := csv.NewReader(bytes.NewReader([]byte(strings.Join(lines, "\n"))))
	recs, err := r.ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("ns3ref/lossregime.csv: %v (%d records)", err, len(recs))
	}
	out := map[string][]float64{}
	for i, rec := range recs[1:] {
		if len(rec) != 5 {
			return nil, fmt.Errorf("ns3ref/lossregime.csv: line %d: %d fields, want 5", i+2, len(rec))
		}
		loss, err1 := strconv.ParseFloat(rec[2], 64)
		fct, err2 := strconv.ParseFloat(rec[4], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("ns3ref/lossregime.csv: line %d: bad number", i+2)
		}
		k := fmt.Sprintf("%s,%s,%g", rec[0], rec[1], loss)
		out[k] = append(out[k], fct)
	}
	return out, nil
}

// WriteLossRegimeTable renders rows as markdown.
func WriteLossRegimeTable(w io.Writer, rows []LossRegimeRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "10 MB over one 10 Mbit/s, 40 ms RTT link, 100-packet queue, Bernoulli loss on the data direction; median completion time of %d seeds on each side (ns-3 3.37: `bench/ns3/lossregime.sh`).\n\n", lossRegimeSeeds)
	b.WriteString("| loss | reference (ns-3) | hetquic | what is matched | ns-3 (s) | hetquic (s) | hetquic / ns-3 |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p := r.Pair
		fmt.Fprintf(&b, "| %g %% | %s, DelAckCount %d | %s, ack_every %d | %s | %.2f | %.2f | %+.1f %% |\n",
			100*r.Loss, p.NS3TCP, p.NS3DelAck, p.CC, p.AckEvery, p.Why, r.NS3S, r.SimS, 100*(r.SimS/r.NS3S-1))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
