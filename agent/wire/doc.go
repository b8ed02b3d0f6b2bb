// Package wire is the protocol between ct-client and ct-server, the one
// thing both ends of the agent share: the stream request forms and their
// parser, the bounded head reader, the agent's headers and QUIC error codes,
// tunnel resumption's headers and replay size, connect-udp paths and the
// datagram framing, the push stream's head and the liveness probes. It is
// apart so that neither end imports the other.
//
// # Wire protocol ("ct/1", ALPN "hetquic-ct/1")
//
// Every client-initiated bidirectional stream carries exactly one HTTP/1.1
// request in wire format and gets exactly one HTTP/1.1 response: the
// application's own request, re-encoded in absolute form
// ("GET http://app:80/x HTTP/1.1"), or a CONNECT whose 200 response turns the
// rest of the stream into a raw byte tunnel. Reusing HTTP/1.1 framing keeps
// the agent's own format down to three control requests, all origin-form
// under /_ct/:
//
//	GET /_ct/hello     first stream of every connection; Authorization: Bearer TOKEN
//	GET /_ct/ping      liveness probe, 200 "pong"
//	GET /_ct/prefetch?url=U   ask ct-server to fetch U and push it (a hint)
//
// and one server-initiated unidirectional stream type, a push: an HTTP/1.1
// response carrying the pushed URL in the Ct-Push-Url header, for the
// ct-client's prefetch cache.
//
// HTTP/3 would have framed requests just as well, but CONNECT tunnels,
// mid-response resumption and pushes need stream-level control that
// quic-go's http3 package does not expose; one HTTP/1.1 message per stream
// needs nothing beyond net/http's parser, which is fuzzed here (FuzzReadHead).
//
// # Tunnel resumption
//
// Resumable CONNECT tunnels (session-layer stream migration for byte
// streams). A CONNECT carrying "Ct-Session: new" opens a session at
// ct-server: the upstream TCP connection outlives the QUIC stream, and
// ct-server keeps the last ReplayDownBytes bytes it sent down. When the
// stream's path fails, ct-client opens a stream on another path with
//
//	CONNECT host:port HTTP/1.1
//	Ct-Session: ID
//	Ct-Resume-Down: N      (bytes of the tunnel ct-client has delivered to the app)
//
// and ct-server answers 200 with "Ct-Resume-Up: M" (bytes of the app's
// data it has written upstream), replays its bytes from N on, and carries
// on; ct-client re-sends its own bytes from M on from its replay buffer
// (ReplayBytes). Each side's replay buffer is as large as the QUIC stream
// receive window the other side grants (and its reader's buffers), so every byte the peer may not have
// delivered yet is still in the buffer: no byte is lost or duplicated. A
// session left detached for DetachGrace (the outage hold) ends, and its upstream connection
// is closed; a resume after that gets 404.
//
// # UDP flows
//
// UDP over the agent, with the semantics of CONNECT-UDP (RFC 9298) on QUIC
// DATAGRAM frames (RFC 9221). A UDP flow to host:port is one request
// stream, in RFC 9298's HTTP/1.1 form:
//
//	GET /.well-known/masque/udp/{host}/{port}/ HTTP/1.1
//	Connection: Upgrade
//	Upgrade: connect-udp
//	Capsule-Protocol: ?1
//
// answered "101 Switching Protocols" by ct-server, which then holds a UDP
// socket connected to the target (after the same allow-list check as
// every other stream). The stream stays open as long as the flow: either
// side ending it ends the flow. Each UDP payload travels as one QUIC
// DATAGRAM on the stream's connection, prefixed as RFC 9297 prescribes
// for HTTP/3: the quarter stream ID (stream ID / 4) and context ID 0, both
// QUIC varints. Datagrams are unreliable like UDP: one lost or too large
// for the path (quic-go's DatagramTooLargeError) is dropped. A flow
// whose connection dies is opened again on another path with the next
// payload the app sends.
package wire
