package abuse

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Markdown writes the report as the table agent/DESIGN.md carries, with
// the date, the command and the load, since these are timings.
func (r *Report) Markdown(w io.Writer, command, load string, now time.Time) {
	c := r.Config
	fmt.Fprintf(w, "Measured %s with `%s` (load: %s), loopback, ct-server under its default configuration.\n\n",
		now.UTC().Format("2006-01-02 15:04 MST"), command, strings.TrimSpace(load))
	fmt.Fprintf(w, "| what | value | bound |\n|---|---|---|\n")
	fmt.Fprintf(w, "| ct-server peak RSS (VmHWM) | %d MiB (%d MiB before the abuse) | < %d MiB |\n", r.PeakRSS>>20, r.BaseRSS>>20, c.MaxRSSBytes>>20)
	fmt.Fprintf(w, "| good client: requests of %d kB, p50 / p99 | %d, %d ms / %d ms | p99 < %d ms |\n",
		c.GoodBytes/1000, r.GoodReqs, r.P50.Milliseconds(), r.P99.Milliseconds(), c.MaxP99.Milliseconds())
	fmt.Fprintf(w, "| good client: bytes checked, all correct | %d (%d failed requests) | every byte |\n", r.BytesOK, r.GoodFailed)
	fmt.Fprintf(w, "| abuse: connections with hello | %d of %d accepted | max_conns |\n", r.Accepted.Conns, c.Conns)
	fmt.Fprintf(w, "| abuse: unread %d MB requests | %d of %d accepted | max_streams, buffer, memory |\n", c.BigBytes/1_000_000, r.Accepted.Streams, c.Streams)
	fmt.Fprintf(w, "| abuse: unread %d MB CONNECT tunnels | %d of %d accepted | max_tunnels, buffer, memory |\n", c.BigBytes/1_000_000, r.Accepted.Tunnels, c.Tunnels)
	fmt.Fprintf(w, "| abuse: prefetch hints | %d of %d accepted | max_prefetch, max_streams |\n", r.Accepted.Hints, c.Hints)
	fmt.Fprintf(w, "| abuse: handshakes without hello (%d sources) | %d completed | pre-auth caps |\n", c.Sources, r.Accepted.Handshakes)
	if c.Cycles > 0 {
		fmt.Fprintf(w, "| abuse: short tunnels (%d MB each, read whole, closed) | %d of %d completed | memory_budget (replay buffers) |\n",
			c.CycleBytes/1_000_000, r.Accepted.Cycles, c.Cycles)
		fmt.Fprintf(w, "| ct-server memory reserved (`ct_server_reserved_bytes`), peak sampled | %d MiB | memory_budget |\n", r.PeakReserved>>20)
	}
	if n := r.Accepted.Tunnels + r.Accepted.Streams; c.Only != "" && n > 0 {
		fmt.Fprintf(w, "| ct-server RSS growth per accepted unread %s | %.2f MiB | |\n", strings.TrimSuffix(c.Only, "s"),
			float64(r.PeakRSS-r.BaseRSS)/float64(n)/(1<<20))
	}
	var names []string
	for k, v := range r.LimitHits {
		if v > 0 {
			names = append(names, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	slices.Sort(names)
	fmt.Fprintf(w, "\nLimits that bit (`ct_server_limit_hits_total`): %s. Run time %.0f s; ", strings.Join(names, ", "), r.Elapsed.Seconds())
	if r.Passed() {
		fmt.Fprintf(w, "every bound held.\n")
	} else {
		fmt.Fprintf(w, "**bounds broken: %s**.\n", strings.Join(r.Violations, "; "))
	}
}
