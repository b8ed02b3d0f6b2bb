package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/internal/cputime"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/scenario"
)

// BenchmarkStripeCPU is ct's CPU per byte against plain quic-go's, in one
// process on one shared machine: each op GETs one object of cpuBenchSize
// bytes through ct-client striped over two emulated paths (the relay,
// ct-client, ct-server and the app-server over HTTP/1.1, as the stripe
// experiment runs them), and the same object straight from an HTTP/3
// server with quic-go's http3 client over a relay of one path as fast as
// the two together (so both GETs take about as long: a process's CPU has
// parts that grow with time, not bytes); each GET's process CPU time is
// counted to its mode. The two modes
// alternate, so both see the same load; ratio is ct's CPU per byte over
// plain HTTP/3's. Both bodies are checked byte by byte (the same cost in
// both modes). wire/body is each mode's UDP payload down its relay per
// body byte: QUIC's headers and retransmissions for both, and for ct the
// bytes a stripe's pieces cost past the body (the original stream's
// bytes past its cut, end-game copies), each of which costs the CPU of
// any other packet. down-pkts/MB and up-pkts/MB are each mode's
// datagrams down and up its relay per body MB.
// go test -run '^$' -bench StripeCPU -benchtime 6x ./agent/runner/
// With -cpuprofile, `go tool pprof -tags` splits the CPU by part
// (roleKey): ct-client and ct-server against h3-client and h3-server.
func BenchmarkStripeCPU(b *testing.B) {
	ctx := context.Background()
	sc := cpuBenchScenario()
	e, err := newEnv(ctx, envConfig{Scenario: sc, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	h3get, h3relay, stop := plainH3(b, cpuBenchOnePath())
	defer stop()
	relays := []*udprelay.Relay{h3relay, e.relay}
	ct := func() error {
		_, err := e.get(ctx, "bench", cpuBenchSize)
		return err
	}
	modes := []func() error{h3get, ct}
	for _, get := range modes { // warm-up: handshakes, rate estimates
		if err := get(); err != nil {
			b.Fatal(err)
		}
	}
	var cpu [2]time.Duration
	var wire [2]uint64
	var pk [2]packets
	b.ResetTimer()
	for range b.N {
		for i, get := range modes {
			start, down, p0 := cputime.Process(), downBytes(relays[i]), countPackets(relays[i])
			if err := get(); err != nil {
				b.Fatal(err)
			}
			cpu[i] += cputime.Process() - start
			wire[i] += downBytes(relays[i]) - down
			p1 := countPackets(relays[i])
			pk[i].up += p1.up - p0.up
			pk[i].down += p1.down - p0.down
		}
	}
	b.StopTimer()
	for name, n := range e.pathBytes() {
		if n < cpuBenchSize/10 {
			b.Fatalf("path %s carried %.0f bytes: not striped", name, n)
		}
	}
	gb := float64(b.N) * cpuBenchSize / 1e9
	b.ReportMetric(cpu[0].Seconds()/gb, "h3-cpu-s/GB")
	b.ReportMetric(cpu[1].Seconds()/gb, "ct-cpu-s/GB")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "ratio")
	b.ReportMetric(float64(wire[0])/(gb*1e9), "h3-wire/body")
	b.ReportMetric(float64(wire[1])/(gb*1e9), "ct-wire/body")
	b.ReportMetric(float64(pk[0].down)/(gb*1e3), "h3-down-pkts/MB")
	b.ReportMetric(float64(pk[1].down)/(gb*1e3), "ct-down-pkts/MB")
	b.ReportMetric(float64(pk[0].up)/(gb*1e3), "h3-up-pkts/MB")
	b.ReportMetric(float64(pk[1].up)/(gb*1e3), "ct-up-pkts/MB")
}

// packets are UDP datagrams a relay delivered, each way.
type packets struct{ up, down uint64 }

// countPackets is the datagrams r has delivered, over every path: each
// costs system calls in the sender, the relay and the receiver whatever
// its size, so the modes' packets per body byte (down: data; up: mostly
// ACKs) say whether one sends more of them for the same bytes. The up
// count varies with the load (a loaded receiver finds more packets queued
// per ACK it sends); fewer ACKs alone did not lower the CPU per byte
// (a scratch quic-go that ACKed every 8 packets, 5 alternated pairs at
// load 28–31, 2026-12-01: ACKs halved, ct 33.1 → 34.7 CPU-s/GB).
func countPackets(r *udprelay.Relay) packets {
	var n packets
	for _, p := range r.Engine().Stats() {
		n.up += p.Up.PacketsOut
		n.down += p.Down.PacketsOut
	}
	return n
}

// downBytes is the UDP payload r has delivered down, over every path.
func downBytes(r *udprelay.Relay) uint64 {
	var n uint64
	for _, p := range r.Engine().Stats() {
		n += p.Down.BytesOut
	}
	return n
}

// cpuBenchSize is one GET's object: striped (over DefaultStripeMin) in
// pieces of every size the scheduler picks, and long enough that a GET's
// set-up costs little of its CPU.
const cpuBenchSize = 16_000_000

// cpuBenchScenario is two equal paths (the matrix's "equal" mix at twice
// the rate, so a GET takes under a second).
func cpuBenchScenario() *scenario.Scenario {
	link := scenario.Link{DelayMs: 10, RateMbps: 100, QueueBytes: 625_000}
	return &scenario.Scenario{Name: "cpu-bench", Paths: []scenario.Path{
		{Name: "p0", Up: scenario.Link{DelayMs: 10}, Down: link},
		{Name: "p1", Up: scenario.Link{DelayMs: 10}, Down: link},
	}}
}

// cpuBenchOnePath is one path with cpuBenchScenario's two paths' rate and
// queue, and their delay.
func cpuBenchOnePath() *scenario.Scenario {
	link := scenario.Link{DelayMs: 10, RateMbps: 200, QueueBytes: 1_250_000}
	return &scenario.Scenario{Name: "cpu-bench-one", Paths: []scenario.Path{
		{Name: "p0", Up: scenario.Link{DelayMs: 10}, Down: link},
	}}
}

// plainH3 serves origin's /bytes over HTTP/3 behind a relay of sc and
// returns a GET of cpuBenchSize bytes by quic-go's http3 client over the
// relay's first path, checked as env.get checks ct's, and the relay;
// stop ends them.
func plainH3(b *testing.B, sc *scenario.Scenario) (get func() error, relay *udprelay.Relay, stop func()) {
	pair, err := selfsigned.New()
	if err != nil {
		b.Fatal(err)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	srv := &http3.Server{Handler: origin.Handler(nil), TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair.Cert}})}
	go func() {
		pprof.SetGoroutineLabels(roleLabel("h3-server"))
		srv.Serve(udp)
	}()
	relay, err = udprelay.Loopback(sc, udp.LocalAddr().(*net.UDPAddr).AddrPort(), 1)
	if err != nil {
		b.Fatal(err)
	}
	pc, err := relay.ListenPath(0)
	if err != nil {
		b.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	var conn *quic.Conn
	pprof.Do(context.Background(), pprof.Labels(roleKey, "h3-client"), func(ctx context.Context) { // its goroutines' CPU (roleKey)
		conn, err = tr.Dial(ctx, net.UDPAddrFromAddrPort(relay.Addr()),
			&tls.Config{RootCAs: pair.Pool, ServerName: "localhost", NextProtos: []string{http3.NextProtoH3}}, nil)
	})
	if err != nil {
		b.Fatal(err)
	}
	cc := (&http3.Transport{}).NewClientConn(conn)
	url := fmt.Sprintf("https://localhost/bytes/%d", cpuBenchSize)
	get = func() error {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := checkPattern(resp.Body)
		if err == nil && n != cpuBenchSize {
			err = fmt.Errorf("h3: %d bytes, want %d", n, cpuBenchSize)
		}
		return err
	}
	return get, relay, func() {
		conn.CloseWithError(0, "")
		tr.Close()
		pc.Close()
		relay.Close()
		srv.Close()
		udp.Close()
	}
}
