package pcm

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestTransportRefusesInOneLine: the http3.Transport fields PCM cannot
// honour, or set twice, fail the request with one line naming the field.
func TestTransportRefusesInOneLine(t *testing.T) {
	dial := func(context.Context, string, *tls.Config, *quic.Config) (*quic.Conn, error) { return nil, nil }
	for _, tc := range []struct {
		tr   *Transport
		want string
	}{
		{&Transport{Dial: dial}, "Transport.Dial"},
		{&Transport{TLSClientConfig: &tls.Config{}, Config: Config{TLS: &tls.Config{}}}, "TLSClientConfig"},
		{&Transport{QUICConfig: &quic.Config{}, Config: Config{QUIC: &quic.Config{}}}, "QUICConfig"},
		{&Transport{Config: Config{Selector: polling(2)}}, "Selector"},
	} {
		req, _ := http.NewRequest(http.MethodGet, "https://example.org/", nil)
		_, err := tc.tr.RoundTrip(req)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming it", tc.want, err)
		}
	}
}

// TestTransportHTTP3Fields: a Transport set up with http3.Transport's
// field names works, and RoundTripOpt's OnlyCachedConn dials nothing.
func TestTransportHTTP3Fields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		roots := memServe(t, n, origin.Handler(nil), nil)
		cfg := memConfig(t, n, 2, Config{}, nil)
		tr := &Transport{Config: cfg, TLSClientConfig: roots, QUICConfig: &quic.Config{}, DisableCompression: true, MaxResponseHeaderBytes: 1 << 16}
		defer tr.Close()
		url := "https://" + memServer.String() + "/bytes/10"
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if _, err := tr.RoundTripOpt(req, http3.RoundTripOpt{OnlyCachedConn: true}); !errors.Is(err, http3.ErrNoCachedConn) {
			t.Fatalf("OnlyCachedConn without a connection: %v, want ErrNoCachedConn", err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ = http.NewRequest(http.MethodGet, url, nil)
		resp, err = tr.RoundTripOpt(req, http3.RoundTripOpt{OnlyCachedConn: true})
		if err != nil {
			t.Fatalf("OnlyCachedConn with a connection: %v", err)
		}
		resp.Body.Close()
	})
}
