package agent

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/hetquic/hetquic/origin"
)

// uploadStall is the StallTimeout of the upload tests: short, so that the
// old total deadline on a request's sending (10 × StallTimeout) would cut
// the regular sizes, which take longer than that.
const uploadStall = 300 * time.Millisecond

// upload POSTs size pattern bytes to path through tc and returns the
// status and body of the answer.
func upload(t testing.TB, tc *testClient, base, path string, size int64) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, io.LimitReader(&origin.Pattern{Size: size}, size))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	resp, err := tc.hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var body []byte
	if path == "/echo" {
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		if err != nil {
			t.Fatalf("echo: after %d bytes: %v", n, err)
		}
		body = fmt.Appendf(nil, "%d %x", n, h.Sum(nil))
	} else if body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("upload answer: %v", err)
	}
	return resp.StatusCode, body
}

func wantUpload(t testing.TB, code int, body []byte, size int64) {
	t.Helper()
	want := fmt.Sprintf("%d %x", size, patternSum(size))
	if code != http.StatusOK || string(body) != want {
		t.Fatalf("got %d %.80q, want 200 %q", code, body, want)
	}
}

// uploadPair is a ct-server whose receiving side (the uplink) is a
// rate bytes/s bottleneck (0: loopback) and a ct-client of two paths.
func uploadPair(t testing.TB, rate float64, stall time.Duration) (*testUpstream, *testClient) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	if rate > 0 {
		ts.pc.shape(rate, 10*time.Millisecond, 64)
	}
	tc := startClient(t, ts, 2, true, func(c *ClientConfig) {
		if stall > 0 { // else startClient's, which a loaded machine's pauses do not reach
			c.StallTimeout = stall
		}
	})
	return up, tc
}

// A request body streams for as long as it keeps moving: 8 MiB over a
// 20 Mbit/s uplink (4 s, beyond the 10 × StallTimeout the body once had) arrives
// whole (a fixed body deadline once cut 30 MiB at 8 s).
func TestUploadStreams(t *testing.T) {
	up, tc := uploadPair(t, 20*bytesPerMbit, uploadStall)
	const size = 8 << 20
	start := time.Now()
	code, body := upload(t, tc, up.URL, "/up", size)
	wantUpload(t, code, body, size)
	t.Logf("%d MiB uploaded in %v", size>>20, time.Since(start).Round(time.Millisecond))
}

// A streaming echo is full duplex: the answer is read while the body is
// still going out (else the answer fills the stream window and both
// sides wait, until the old total cut the body at 10 × StallTimeout).
// 16 MiB, many times the stream and connection windows; startClient's long
// StallTimeout, as a loaded machine's starved reads are no test here.
func TestEchoStreams(t *testing.T) {
	up, tc := uploadPair(t, 0, 0)
	const size = 16 << 20
	code, body := upload(t, tc, up.URL, "/echo", size)
	wantUpload(t, code, body, size)
}

// BenchmarkUpload: a 30 MiB upload over a 20 Mbit/s
// uplink and a 64 MiB streaming echo (bench/agent/upload.sh). With -short
// (CI's run of every benchmark once) the sizes are shortBenchDiv times
// smaller: the upload alone takes 13 s of real time.
func BenchmarkUpload(b *testing.B) {
	div := int64(1)
	if testing.Short() {
		div = shortBenchDiv
	}
	for _, c := range []struct {
		name string
		rate float64
		path string
		size int64
	}{{"up-30MiB-20Mbit", 20 * bytesPerMbit, "/up", 30 << 20}, {"echo-64MiB", 0, "/echo", 64 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			up, tc := uploadPair(b, c.rate, 0)
			size := c.size / div
			b.SetBytes(size)
			for b.Loop() {
				code, body := upload(b, tc, up.URL, c.path, size)
				wantUpload(b, code, body, size)
			}
		})
	}
}

// shortBenchDiv divides BenchmarkUpload's sizes under -short.
const shortBenchDiv = 16
