package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
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

// TestHTTPSCongestion checks what experiment 2's comparator table names:
// on loopback, a listener pinned to a congestion control other than the
// host's default hands it to the connection it accepts, congestionControl
// reads it back, the TLS 1.2 client fetches a transfer-sized object intact
// over it, and a name the kernel does not know fails with one line naming
// it.
func TestHTTPSCongestion(t *testing.T) {
	cc := otherCongestion(t)
	pair, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	lc := net.ListenConfig{Control: setCongestion(cc)}
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if got := congestionControl(ln); got != cc {
		t.Fatalf("listener runs %q, want %q", got, cc)
	}
	accepted := make(chan string, 1)
	srv := httptest.NewUnstartedServer(origin.Handler(nil))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted <- congestionControl(c.(*tls.Conn).NetConn())
		}
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair.Cert}}
	srv.StartTLS()
	defer srv.Close()
	const size = 1_000_000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := httpsClient{Target: fmt.Sprintf("https://localhost:%d/bytes/%d", ln.Addr().(*net.TCPAddr).Port, size),
		Size: size, Pool: pair.Pool, Version: tls.VersionTLS12,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ln.Addr().String())
		}}
	if _, err := h.round(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := <-accepted; got != cc {
		t.Errorf("accepted connection runs %q, want the listener's %q", got, cc)
	}
	bad := net.ListenConfig{Control: setCongestion("nosuchcc")}
	if ln, err := bad.Listen(context.Background(), "tcp4", "127.0.0.1:0"); err == nil {
		ln.Close()
		t.Error("an unknown congestion control was accepted")
	} else if !strings.Contains(err.Error(), `"nosuchcc"`) {
		t.Errorf("error %v does not name the congestion control", err)
	}
}

// otherCongestion is an available TCP congestion control that is not the
// host's default, so that the test sees the pin take effect; it skips
// where the kernel offers only one.
func otherCongestion(t *testing.T) string {
	t.Helper()
	def, err1 := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	avail, err2 := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err := errors.Join(err1, err2); err != nil {
		t.Skipf("no Linux TCP congestion control: %v", err)
	}
	for _, cc := range strings.Fields(string(avail)) {
		if cc != strings.TrimSpace(string(def)) {
			return cc
		}
	}
	t.Skipf("the kernel offers only %s", avail)
	return ""
}
