package wire

// Liveness: how ct-client asks whether a path to ct-server still works,
// beside the streams (a datagram any packet answers) and through them (a
// ping request).

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
)

// LivenessProbe is the datagram TransportPing sends: a truncated varint,
// which ct-server's datagram router drops as malformed (DatagramRoutes.Dispatch); what
// counts is that it is ack-eliciting, so ct-server's QUIC stack answers it
// with an ACK that no stream's flow control can hold back.
var LivenessProbe = []byte{0xff}

// probePoll is how often TransportPing looks for the answer: a fraction
// of any round trip worth measuring, so the wait costs little beyond it.
const probePoll = 5 * time.Millisecond

// TransportPing sends LivenessProbe on conn and reports whether any packet
// arrived within timeout; probed is false when conn cannot carry
// datagrams (the peer did not enable them).
func TransportPing(ctx context.Context, conn *quic.Conn, timeout time.Duration) (alive, probed bool) {
	before := conn.ConnectionStats().PacketsReceived
	if err := conn.SendDatagram(LivenessProbe); err != nil {
		return false, false
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !SleepCtx(ctx, probePoll) {
			return false, true
		}
		if conn.ConnectionStats().PacketsReceived != before {
			return true, true
		}
	}
	return false, true
}

// Ping asks ct-server for a pong on conn within timeout: is the path alive?
func Ping(ctx context.Context, conn *quic.Conn, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return false
	}
	defer str.CancelRead(CodeOK)
	dl, _ := ctx.Deadline()
	str.SetDeadline(dl)
	if _, err := io.WriteString(str, "GET "+PathPing+" HTTP/1.1\r\nHost: ct\r\n\r\n"); err != nil {
		return false
	}
	str.Close()
	resp, err := NewHeadReader(str).ReadResponse(nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// SleepCtx waits d or until ctx ends; it reports whether d passed (the
// probes here, and both ends' back-offs and lingers).
func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
