// Package server is ct-server, the cloud end of the Cybertwin agent: it
// accepts ct-clients' QUIC connections, authenticates them by token (with a
// login back-off), and serves their streams — forwarded HTTP requests,
// resumable CONNECT tunnels, connect-udp flows and prefetch pushes — to the
// app-servers in its allow-list, under per-client limits and one memory
// budget, never dialling an internal address it was not told to (egress).
// Its configuration file and reload rules are here too.
//
// It is apart from the client (package agent): the two ends share only
// package wire, so each can be read, tested and deployed alone.
package server
