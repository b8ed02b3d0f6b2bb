package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
)

// TestHTTPSClient checks experiment 1's TCP comparator without the root
// lab, against origin's handler on loopback: the body arrives intact, the
// connection negotiates exactly the TLS version asked for (1.2 is the
// Cybertwin paper's), it is HTTP/1.1, and a short body or a server that
// cannot speak the version is an error, not a time.
func TestHTTPSClient(t *testing.T) {
	pair, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	start := func(min uint16) *httptest.Server {
		srv := httptest.NewUnstartedServer(origin.Handler(nil))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair.Cert}, MinVersion: min}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	both, only13 := start(tls.VersionTLS12), start(tls.VersionTLS13)
	const size = 10_000
	cases := []struct {
		name    string
		srv     *httptest.Server
		version uint16
		path    string
		wantErr string
	}{
		{"tls1.2", both, tls.VersionTLS12, fmt.Sprintf("/bytes/%d", size), ""},
		{"tls1.3", both, tls.VersionTLS13, fmt.Sprintf("/bytes/%d", size), ""},
		{"short body", both, tls.VersionTLS12, fmt.Sprintf("/bytes/%d", size-1), "9999 bytes, want 10000"},
		{"server without tls1.2", only13, tls.VersionTLS12, fmt.Sprintf("/bytes/%d", size), "TLS 1.2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			addr := c.srv.Listener.Addr().String()
			h := httpsClient{Target: fmt.Sprintf("https://localhost:%d%s", c.srv.Listener.Addr().(*net.TCPAddr).Port, c.path),
				Size: size, Pool: pair.Pool, Version: c.version,
				Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "tcp", addr)
				}}
			ds, err := h.round(ctx, 2)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatal(err)
			case c.wantErr == "" && len(ds) != 2:
				t.Fatalf("%d times, want 2", len(ds))
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, c.wantErr)
			}
		})
	}
}
