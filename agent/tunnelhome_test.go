package agent

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestQuietTunnelFailback, on memnet and fake time: a CONNECT tunnel that
// moves no bytes down (idle, or only uploading) moves to the other path
// for a 10 s cut of its own and back within FailbackHold + 2 s of its
// return — it has no received chunks to look between, so a timer looks —
// and then carries a request intact.
func TestQuietTunnelFailback(t *testing.T) {
	for _, upload := range []bool{false, true} {
		t.Run(map[bool]string{false: "idle", true: "upload-only"}[upload], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { quietTunnelFailback(t, upload) })
		})
	}
}

func quietTunnelFailback(t *testing.T, upload bool) {
	m := startMemAgent(t, 2, nil, nil)
	for i, rate := range failbackRates {
		m.n.SetLink(memPath(i).Addr, rate, 64<<10)
		m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
	}
	conn, br := m.rawProxy(t)
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, memApp)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	paths := m.c.pathList()
	home, other := paths[0], paths[1]
	if other.tunnels.Load() == 1 {
		home, other = other, home
	}
	stopUp := make(chan struct{})
	upDone := make(chan error, 1)
	if upload {
		// An upload the app-server reads as it comes: a request whose
		// body trickles up for the whole cut, so nothing comes down.
		go func() { upDone <- trickleUpload(conn, stopUp) }()
	}
	time.Sleep(failbackCutAt)
	m.n.SetDrop(home.Addr, true)
	time.Sleep(failbackCutFor)
	if other.tunnels.Load() != 1 {
		t.Fatalf("at the end of the cut the tunnel is not on the other path (home %d, other %d)", home.tunnels.Load(), other.tunnels.Load())
	}
	m.n.SetDrop(home.Addr, false)
	time.Sleep(FailbackHold + 2*time.Second)
	if home.tunnels.Load() != 1 {
		t.Fatalf("FailbackHold + 2 s after its path's return the tunnel is not back on it (home %d, other %d)", home.tunnels.Load(), other.tunnels.Load())
	}
	if upload {
		close(stopUp)
		if err := <-upDone; err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the upload's answer: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	const size = 100_000
	fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\n\r\n", size, memApp)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the tunnel's response after the failback: %v", err)
	}
	defer resp.Body.Close()
	if err := intact("tunnel", bufio.NewReader(resp.Body), size); err != nil {
		t.Fatal(err)
	}
}

// trickleUpload sends a chunked POST to /up, a chunk every 100 ms, until
// stop, then ends it and reads the answer (size and digest of the body).
func trickleUpload(conn io.ReadWriter, stop <-chan struct{}) error {
	fmt.Fprintf(conn, "POST /up HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n", memApp)
	for {
		select {
		case <-stop:
			_, err := io.WriteString(conn, "0\r\n\r\n")
			return err
		case <-time.After(100 * time.Millisecond):
			if _, err := io.WriteString(conn, "4\r\nabcd\r\n"); err != nil {
				return err
			}
		}
	}
}
