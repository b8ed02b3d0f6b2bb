package agent

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/internal/cputime"
)

// BenchmarkStripeThroughput is the striped data path's cost on loopback
// with the sockets ct-server and ct-client use in production:
// each op GETs one object of stripeBenchSize bytes through ct-client over
// two loopback paths (striped: it counts the stripes) and ct-server, from
// an HTTP/1.1 upstream, in this one process. It reports the rate
// (MB/s), allocations per MiB moved (count and bytes) and the
// process's CPU seconds per GB, which include the upstream's and the
// app's reads: compare builds with it alternated, not against other
// benchmarks.
// go test -run '^$' -bench StripeThroughput -count 6 ./agent/
func BenchmarkStripeThroughput(b *testing.B) {
	up := startUpstream(b)
	ts := startPlainServer(b, up.hostport)
	tc := startClient(b, ts, 2, true, func(c *ClientConfig) { c.Log = nil })
	u := fmt.Sprintf("%s/bytes/%d", up.URL, stripeBenchSize)
	get := func() {
		resp, err := tc.hc.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != stripeBenchSize {
			b.Fatalf("%d bytes, %v", n, err)
		}
	}
	get() // warm-up: both paths' handshakes and rate estimates
	striped := tc.stripes.Load()
	b.SetBytes(stripeBenchSize)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	var cpu time.Duration
	for b.Loop() {
		start := cputime.Process()
		get()
		cpu += cputime.Process() - start
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	mib := float64(b.N) * stripeBenchSize / (1 << 20)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/mib, "allocs/MiB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/mib/(1<<20), "MiB-alloc/MiB")
	if got := tc.stripes.Load() - striped; got != int64(b.N) {
		b.Fatalf("%d of %d GETs striped", got, b.N)
	}
	b.ReportMetric(cpu.Seconds()/(float64(b.N)*stripeBenchSize/1e9), "cpu-s/GB")
}

// stripeBenchSize is one GET's object: well over DefaultStripeMin, so
// striped in pieces of every size the scheduler picks.
const stripeBenchSize = 32 << 20

// startPlainServer is startServer (no log) on a plain UDP socket:
// startServer's impairConn hides the *net.UDPConn from quic-go, which then
// sends each packet with its own sendto (no GSO, no batching): in this
// benchmark's profile those calls took 24 % of the process's CPU, a cost
// production does not have.
func startPlainServer(t testing.TB, allow ...string) *testServer {
	t.Helper()
	p := testPair(t)
	s, err := server.NewServer(server.Config{
		TLS:     &tls.Config{Certificates: []tls.Certificate{p.Cert}},
		Clients: []server.ClientAuth{{ID: "alice", Token: testToken}},
		Allow:   allow,
	})
	if err != nil {
		t.Fatal(err)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: udp.LocalAddr().String(), pool: &tls.Config{RootCAs: p.Pool}, pair: p, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(udp) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}
