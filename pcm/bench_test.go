package pcm

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/pathsel"
)

// BenchmarkRequest compares one 5 KB request through PCM (one path, so the
// difference is PCM's own bookkeeping: selector, locks, stream timing,
// stall watch) with the same request on plain quic-go's http3 client, both
// over loopback with no impairment. The target: PCM adds ≤ 50 µs.
func BenchmarkRequest(b *testing.B) {
	srv := startOrigin(b)
	const target = "/bytes/5120"
	b.Run("plain-quic-go", func(b *testing.B) {
		ctx := context.Background()
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 11)})
		if err != nil {
			b.Fatal(err)
		}
		tr := &quic.Transport{Conn: udp}
		defer tr.Close()
		defer udp.Close()
		raddr, _ := net.ResolveUDPAddr("udp", srv.addr)
		tlsConf := &tls.Config{RootCAs: srv.pool.RootCAs, ServerName: "localhost", NextProtos: []string{http3.NextProtoH3}}
		conn, err := tr.Dial(ctx, raddr, tlsConf, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.CloseWithError(0, "")
		cc := (&http3.Transport{}).NewClientConn(conn)
		url := "https://localhost" + target
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := cc.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("pcm", func(b *testing.B) {
		sel, _ := pathsel.New(pathsel.Default(), newRand(1))
		sel.AddPath(0)
		c := dial(b, srv, Config{Selector: sel, Paths: loopbackPaths(1)})
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := c.Get(ctx, target, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTransport is the issue's CPU comparison (the "CPU per 5 KB
// GET" table of hetquic pcm cuts, pcm/measure.MeasureCPU) as a benchmark
// that can be profiled: 5 KB GETs through an http.Client over
// pcm.Transport with three loopback paths (default strategy and side
// probes) and over quic-go's http3.Transport, against one origin in this
// process. cpu-µs/op is the process's CPU per GET, the origin's included,
// as the cuts command counts it.
func BenchmarkTransport(b *testing.B) {
	srv := startOrigin(b)
	roots := &tls.Config{RootCAs: srv.pool.RootCAs, ServerName: "localhost"}
	url := "https://" + srv.addr + "/bytes/5120"
	b.Run("http3.Transport", func(b *testing.B) {
		tr := &http3.Transport{TLSClientConfig: roots}
		defer tr.Close()
		benchGets(b, tr, url)
	})
	b.Run("pcm.Transport-3-paths", func(b *testing.B) {
		tr := &Transport{Config: Config{ServerName: "localhost", TLS: roots, Paths: loopbackPaths(3)}}
		defer tr.Close()
		benchGets(b, tr, url)
	})
}

// benchWarmGets are the GETs before the clock starts: the dial, and the
// selector's first tries of each path.
const benchWarmGets = 50

// benchGets times b.N GETs of url through rt after benchWarmGets.
func benchGets(b *testing.B, rt http.RoundTripper, url string) {
	hc := &http.Client{Transport: rt}
	get := func() {
		resp, err := hc.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range benchWarmGets {
		get()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for range b.N {
		get()
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// processCPU is the process's user + system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleClient measures the CPU an idle three-path Client costs
// (the process's, the in-process server's included: it sends nothing to
// an idle client), per second of idleness, after a few GETs: side probes
// off, then on (every probe connection a Client of its own). A benchmark,
// not a test: real time on a shared machine.
// go test -run XXX -bench IdleClient -benchtime 3x ./pcm/
func BenchmarkIdleClient(b *testing.B) {
	srv := startOrigin(b)
	for _, tc := range []struct {
		name string
		off  bool
	}{{"probes-off", true}, {"probes-on", false}} {
		b.Run(tc.name, func(b *testing.B) {
			c := dial(b, srv, Config{Paths: loopbackPaths(3), Probes: Probes{Off: tc.off}})
			for range benchWarmGets {
				if _, err := c.Get(context.Background(), "/bytes/5120", nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			cpu := processCPU()
			for range b.N {
				time.Sleep(idleSecond)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/s")
		})
	}
}

// idleSecond is one op of BenchmarkIdleClient.
const idleSecond = time.Second
