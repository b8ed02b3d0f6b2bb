package measure

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/scenario"
)

// CPUCost is the process CPU time (user + system, the origin's included:
// the same for both) per small GET, through pcm.Transport with three paths
// and through quic-go's http3.Transport, over loopback without emulation.
type CPUCost struct {
	PCMus, BaselineUs float64 // µs per GET: medians over the rounds
	Ratio             float64 // the median of the rounds' PCM / baseline
	Gets, Rounds      int
}

// MeasureCPU sends gets sequential GETs of size bytes through each
// transport per round, alternating which goes first, for rounds rounds.
func MeasureCPU(ctx context.Context, gets, rounds, size int) (CPUCost, error) {
	pair, err := selfsigned.New()
	if err != nil {
		return CPUCost{}, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return CPUCost{}, err
	}
	srv, err := origin.Serve(udp, origin.Config{TLS: &tls.Config{Certificates: []tls.Certificate{pair.Cert}}})
	if err != nil {
		udp.Close()
		return CPUCost{}, err
	}
	defer srv.Close()
	roots := &tls.Config{RootCAs: pair.Pool, ServerName: "localhost"}
	var paths []pcm.LocalPath
	for i := range 3 {
		paths = append(paths, pcm.LocalPath{Name: fmt.Sprintf("lo%d", i), Addr: netip.AddrFrom4([4]byte{127, 0, 0, byte(21 + i)})})
	}
	pt := &pcm.Transport{Config: pcm.Config{ServerName: "localhost", TLS: roots, Paths: paths}}
	defer pt.Close()
	bt := &http3.Transport{TLSClientConfig: roots}
	defer bt.Close()
	url := fmt.Sprintf("https://localhost:%d/bytes/%d", udp.LocalAddr().(*net.UDPAddr).Port, size)
	pcmURL := fmt.Sprintf("https://127.0.0.1:%d/bytes/%d", udp.LocalAddr().(*net.UDPAddr).Port, size)
	var pcmUs, baseUs, ratios []float64
	for r := range rounds {
		var p, b float64
		if r%2 == 0 {
			p, err = cpuPerGet(ctx, pt, pcmURL, gets)
			if err == nil {
				b, err = cpuPerGet(ctx, bt, url, gets)
			}
		} else {
			b, err = cpuPerGet(ctx, bt, url, gets)
			if err == nil {
				p, err = cpuPerGet(ctx, pt, pcmURL, gets)
			}
		}
		if err != nil {
			return CPUCost{}, err
		}
		if r == 0 {
			continue // warm-up: dials, the selector's first tries
		}
		pcmUs, baseUs, ratios = append(pcmUs, p), append(baseUs, b), append(ratios, p/b)
	}
	return CPUCost{PCMus: stats.Median(pcmUs), BaselineUs: stats.Median(baseUs), Ratio: stats.Median(ratios), Gets: gets, Rounds: rounds - 1}, nil
}

// cpuPerGet is the process CPU µs per GET of url through rt.
func cpuPerGet(ctx context.Context, rt http.RoundTripper, url string, gets int) (float64, error) {
	hc := &http.Client{Transport: rt}
	before := cpuTime()
	for range gets {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return float64(cpuTime()-before) / float64(time.Microsecond) / float64(gets), nil
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProbeCost is what a Client's side probes (pcm.Config.Probes, defaults)
// cost on the wire: bytes per second both ways, handshakes included, over
// an idle connection with three paths.
type ProbeCost struct {
	BytesPerSecond float64
	Seconds        float64
}

// MeasureProbeCost keeps a Client with default probes idle for d over three
// emulated paths of the given RTTs and counts its probes' bytes.
func MeasureProbeCost(ctx context.Context, rtts []float64, d time.Duration) (ProbeCost, error) {
	sc := &scenario.Scenario{Name: "probe-cost"}
	for i, rtt := range rtts {
		l := scenario.Link{DelayMs: rtt / 2, RateMbps: 100}
		sc.Paths = append(sc.Paths, scenario.Path{Name: fmt.Sprintf("p%d", i), Up: l, Down: l})
	}
	b, err := NewBench(sc, 1)
	if err != nil {
		return ProbeCost{}, err
	}
	defer b.Close()
	c, err := pcm.Dial(ctx, b.libConfig())
	if err != nil {
		return ProbeCost{}, err
	}
	defer c.Close()
	if _, err := c.Get(ctx, "/bytes/10", nil); err != nil {
		return ProbeCost{}, err
	}
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return ProbeCost{}, ctx.Err()
	}
	secs := time.Since(start).Seconds()
	return ProbeCost{BytesPerSecond: float64(c.Stats().ProbeBytes) / secs, Seconds: secs}, nil
}
