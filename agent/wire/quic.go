package wire

import (
	"time"

	"github.com/quic-go/quic-go"
)

// QUICConfig is the agent's QUIC configuration: the paper keeps each
// connection alive with KeepAlivePeriod = MaxIdleTimeout/4 (§IV-B).
func QUICConfig(base *quic.Config, idle time.Duration, streams int64) *quic.Config {
	var c quic.Config
	if base != nil {
		c = *base
	}
	if c.MaxIdleTimeout == 0 {
		c.MaxIdleTimeout = idle
	}
	if c.KeepAlivePeriod == 0 {
		c.KeepAlivePeriod = c.MaxIdleTimeout / 4
	}
	if c.HandshakeIdleTimeout == 0 {
		c.HandshakeIdleTimeout = 3 * time.Second
	}
	if c.MaxIncomingStreams == 0 {
		c.MaxIncomingStreams = streams
	}
	c.EnableDatagrams = true // UDP flows
	if c.MaxStreamReceiveWindow == 0 {
		c.MaxStreamReceiveWindow = StreamWindow // tunnel resumption relies on it
	}
	if c.InitialStreamReceiveWindow == 0 || c.InitialStreamReceiveWindow > c.MaxStreamReceiveWindow {
		c.InitialStreamReceiveWindow = min(512<<10, c.MaxStreamReceiveWindow)
	}
	return &c
}

// ShortErr is err's text cut to 200 bytes, for a header, a log line or a
// status field.
func ShortErr(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}
