// Package layeredvideo is thesis chapter 4's application in the simulator: DASH
// video with scalable coding (one base layer, two enhancement layers) over
// multipath QUIC, a frame every ΔT = 150 ms, frame-level FEC, and the
// chapter's scenarios — an ultra-dense Wi-Fi lattice crossed by a moving
// host (§4.5.2), an 8×2 backbone (§4.5.3) with and without background TCP
// (§4.5.4), and an AP-spacing sweep (Fig. 4.8) — under four controllers:
// QC-MAB (package qcmab), Peekaboo (package peekaboo), LEAP (leap.go, from
// its papers; the older stand-in kept as the ablation leap-fec-bbr) and
// minRTT. Deterministic from the seed.
package layeredvideo

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed sintel.csv
var sintelCSV string

// Ladder is the Sintel representation ladder in Mbit/s, lowest first.
var Ladder = mustLadder(sintelCSV)

func mustLadder(s string) []float64 {
	l, err := parseLadder(s)
	if err != nil {
		panic(err) // the embedded file is checked by TestLadder
	}
	return l
}

// parseLadder reads "index,mbps" rows (comments with #, one header row):
// indices 0, 1, … in order, rates strictly increasing.
func parseLadder(s string) ([]float64, error) {
	var out []float64
	header := false
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !header {
			if line != "index,mbps" {
				return nil, fmt.Errorf("ladder line %d: header %q, want index,mbps", n+1, line)
			}
			header = true
			continue
		}
		i, r, ok := strings.Cut(line, ",")
		idx, err1 := strconv.Atoi(i)
		mbps, err2 := strconv.ParseFloat(r, 64)
		if !ok || err1 != nil || err2 != nil || idx != len(out) || !(mbps > 0) || (len(out) > 0 && mbps <= out[len(out)-1]) {
			return nil, fmt.Errorf("ladder line %d: %q (want index %d and a rate above the last)", n+1, line, len(out))
		}
		out = append(out, mbps)
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("ladder: %d representations, want ≥ 2", len(out))
	}
	return out, nil
}
