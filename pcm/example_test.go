package pcm_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"

	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pcm"
)

// One HTTP/3 connection that migrates, before each request, to the path the
// default strategy chooses. The origin here is hetquic's own on loopback,
// with a throw-away certificate; 127.0.0.11 and 127.0.0.12 stand for two
// interfaces' addresses.
func Example() {
	cert, err := selfsigned.New()
	if err != nil {
		log.Fatal(err)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := origin.Serve(udp, origin.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert.Cert}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	c, err := pcm.Dial(ctx, pcm.Config{
		Server:     udp.LocalAddr().String(),
		ServerName: "localhost",
		TLS:        &tls.Config{RootCAs: cert.Pool},
		Paths: []pcm.LocalPath{
			{Name: "wifi", Addr: netip.MustParseAddr("127.0.0.11")},
			{Name: "lte", Addr: netip.MustParseAddr("127.0.0.12")},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		res, err := c.Get(ctx, "/bytes/5120", io.Discard)
		if err != nil {
			log.Fatal(err)
		}
		// res.PathName, res.End.Sub(res.Est) (the task completion time), …
		fmt.Println(res.Status, res.TotalBytes)
	}
	// Output:
	// 200 5120
	// 200 5120
	// 200 5120
}
