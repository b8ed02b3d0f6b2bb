// Package agent is the Cybertwin agent (Cybertwin paper §IV): a ct-client on
// the device that is a local HTTP proxy for app-clients, and a ct-server in
// the cloud that talks plain HTTP/TCP to the app-servers beside it. Between
// them the ct-client keeps one always-on QUIC connection per local interface;
// every app request rides its own QUIC stream on the connection a pathchoice.Scheduler
// picks, and a response whose connection stalls or dies carries on over
// another connection from the byte where it stopped (stream migration).
//
// The protocol between the two ends is package wire; the client's choice
// of path, pathchoice.
package agent
