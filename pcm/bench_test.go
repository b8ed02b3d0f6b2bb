package pcm

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"

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
