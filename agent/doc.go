// Package agent is ct-client, the device end of the Cybertwin agent
// (Cybertwin paper §IV): a local HTTP proxy (and SOCKS5 proxy, package
// agent/socksproxy) for app-clients that keeps one always-on QUIC connection per local interface
// to ct-server (package agent/server), the cloud end that talks plain
// HTTP/TCP to the app-servers beside it. Every app request rides its own
// QUIC stream on the connection package pathchoice picks, and a response
// whose connection stalls or dies carries on over another connection from
// the byte where it stopped (stream migration); a large one is striped over
// several paths, and CONNECT tunnels and UDP flows move between paths too.
//
// The two ends share only the protocol, package agent/wire, and a few
// leaves (idlebody, ops, identity); the agent's README maps every package.
package agent
