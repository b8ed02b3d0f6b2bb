package pcm

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// exerciseTransport sends GET, POST and HEAD through an http.Client whose
// Transport is PCM's, to the origin at addr (which serves /bytes/{n} and
// POST /echo), and checks every answer. Requests alternate over two paths
// (a polling selector), so both carry requests and the connection moves.
// The default no longer tries each path first: with the start-up probe
// sweep it may leave a path its probe showed slower untried, and on
// loopback either path may look slower (3 of 10 runs never moved).
func exerciseTransport(t *testing.T, addr string, cfg Config) {
	t.Helper()
	cfg.Strategy = pathsel.Config{Strategy: pathsel.Polling}
	tr := &Transport{Config: cfg}
	defer tr.Close()
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	_, port, _ := net.SplitHostPort(addr)
	base := "https://127.0.0.1:" + port
	for i := range 4 {
		resp, err := hc.Get(fmt.Sprintf("%s/bytes/%d", base, 5000+i))
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %d: status %d, %v", i, resp.StatusCode, err)
		}
		checkPattern(t, body, 5000+i)
	}
	payload := strings.Repeat("pcm transport ", 5000) // 70 kB: several packets
	resp, err := hc.Post(base+"/echo", "application/octet-stream", strings.NewReader(payload))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	echo, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(echo, []byte(payload)) {
		t.Fatalf("POST: status %d, %d of %d bytes echoed, %v", resp.StatusCode, len(echo), len(payload), err)
	}
	resp, err = hc.Head(base + "/bytes/12345")
	if err != nil {
		t.Fatalf("HEAD: %v", err)
	}
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 12345 || len(rest) != 0 {
		t.Fatalf("HEAD: status %d, length %d, %d body bytes", resp.StatusCode, resp.ContentLength, len(rest))
	}
	oc := tr.origins[net.JoinHostPort("127.0.0.1", port)]
	if oc == nil || oc.c == nil || len(tr.origins) != 1 {
		t.Fatalf("want one connection for the origin, have %d", len(tr.origins))
	}
	c := oc.c
	if c.switches.Load() == 0 {
		t.Error("the connection never moved: the selector's choice was not followed")
	}
}

func TestTransportOrigin(t *testing.T) {
	srv := startOrigin(t)
	exerciseTransport(t, srv.addr, Config{ServerName: "localhost", TLS: srv.pool, Paths: loopbackPaths(2)})
	log := srv.log.String()
	for _, want := range []string{"127.0.0.11:", "127.0.0.12:", "POST /echo", "HEAD /bytes/12345"} {
		if !strings.Contains(log, want) {
			t.Errorf("the origin's log lacks %q:\n%s", want, log)
		}
	}
}

func TestTransportAioquic(t *testing.T) {
	srv := startPyOrigin(t, "aioquic", false)
	exerciseTransport(t, srv.addr, Config{ServerName: "localhost", TLS: srv.tls, Paths: loopbackPaths(2), ProbeTimeout: 2 * time.Second})
	if seen := srv.clients(2); len(seen) != 2 {
		t.Errorf("aioquic saw client addresses %v, want both paths", seen)
	}
}

func TestTransportRejects(t *testing.T) {
	tr := &Transport{}
	for _, u := range []string{"http://127.0.0.1/x", "https:///x"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	tr = &Transport{Config: Config{Selector: polling(1)}}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:1/x", nil)
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "Selector") {
		t.Errorf("a shared selector: %v", err)
	}
}
