// Package socksproxy is ct-client's SOCKS5 front-end (RFC 1928), beside
// the HTTP proxy, for apps that speak SOCKS but not HTTP proxies: CONNECT
// becomes one of the client's resumable CONNECT tunnels, UDP ASSOCIATE a
// set of connect-udp flows (RFC 9298) carried as QUIC datagrams.
//
// It stands apart from the client's path choice and request path: it
// only turns a SOCKS5 conversation into the client's tunnels and flows,
// and reaches the client through Host. Package socks5 holds the wire
// format it parses.
package socksproxy
