package udprelay

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"hetquic-test"}}
	client = &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"hetquic-test"}}
	return server, client
}

// TestQUICMigrationThroughRelay runs a real quic-go connection through the
// relay on path 0, migrates it to path 1 (AddPath, Probe, Switch), and checks
// that the traffic then flows through path 1's links.
func TestQUICMigrationThroughRelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serverTLS, clientTLS := testTLS(t)
	ln, err := quic.ListenAddr("127.0.0.1:0", serverTLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // echo every stream
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := conn.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go func() { io.Copy(s, s); s.Close() }()
				}
			}()
		}
	}()

	s := parseScenario(t, "name: q\npaths:\n  - name: a\n    up: {delay_ms: 2}\n    down: {delay_ms: 2}\n  - name: b\n    up: {delay_ms: 5}\n    down: {delay_ms: 5}\n")
	r, err := Loopback(s, ln.Addr().(*net.UDPAddr).AddrPort(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c0, err := r.ListenPath(0)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := r.ListenPath(1)
	if err != nil {
		t.Fatal(err)
	}
	tr0, tr1 := &quic.Transport{Conn: c0}, &quic.Transport{Conn: c1}
	defer tr0.Close()
	defer tr1.Close()
	conn, err := tr0.Dial(ctx, net.UDPAddrFromAddrPort(r.Addr()), clientTLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	echo := func(msg string) {
		t.Helper()
		st, err := conn.OpenStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.Write([]byte(msg))
		st.Close()
		got, err := io.ReadAll(st)
		if err != nil || string(got) != msg {
			t.Fatalf("echo %q: got %q, %v", msg, got, err)
		}
	}
	echo("on path a")
	before := r.Engine().Stats()[1]

	p, err := conn.AddPath(tr1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("probe path b: %v", err)
	}
	if err := p.Switch(); err != nil {
		t.Fatal(err)
	}
	// The client sends on b at once; the server answers on b once it has
	// validated the new address, until then on a: echo until b carries
	// more than the probe's answer down, or for as long as a reply may take.
	echo("on path b")
	after := r.Engine().Stats()[1]
	for deadline := time.Now().Add(replyWait); after.Down.PacketsOut <= before.Down.PacketsOut+1 && time.Now().Before(deadline); {
		echo("on path b, again")
		after = r.Engine().Stats()[1]
	}
	if after.Up.PacketsOut <= before.Up.PacketsOut+1 || after.Down.PacketsOut <= before.Down.PacketsOut+1 {
		t.Errorf("path b carried too little after the switch: up %d→%d, down %d→%d packets",
			before.Up.PacketsOut, after.Up.PacketsOut, before.Down.PacketsOut, after.Down.PacketsOut)
	}
	if st := r.Stats(); st.FlowsOpened != 2 {
		t.Errorf("flows_opened %d, want 2 (one client address per path)", st.FlowsOpened)
	}
}
