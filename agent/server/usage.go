package server

import "github.com/quic-go/quic-go"

// Usage is a read-out of ct-server's state at one moment: what its memory
// budget holds, its tunnel sessions, the logins it refused, and each
// client's work in progress. Its metrics say the same over time; tests and
// the status of one server read it directly.
type Usage struct {
	Reserved     int64 // bytes of the memory budget held by all clients' work
	Sessions     int   // resumable tunnel sessions, attached or in their grace
	Unauthorized int64 // connections refused for a missing or unknown token
	Clients      []ClientUsage
}

// ClientUsage is one client's share of Usage.
type ClientUsage struct {
	ID                      string
	Streams, Tunnels, Conns int
	Buffered                int64 // memory reserved by the client's work
	Limits                  Limits
}

// Usage reads the server's state, clients in the policy's order.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	u := Usage{Reserved: s.reserved.Load(), Sessions: len(s.sessions), Unauthorized: s.unauthorized.Load()}
	s.mu.Unlock()
	for _, cs := range s.pol.Load().clients {
		cs.mu.Lock()
		u.Clients = append(u.Clients, ClientUsage{ID: cs.id, Streams: cs.streams, Tunnels: cs.tunnels, Conns: cs.conns,
			Buffered: cs.buffered, Limits: cs.limits})
		cs.mu.Unlock()
	}
	return u
}

// Conns lists the client connections open now (authenticated or not).
func (s *Server) Conns() []*quic.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := make([]*quic.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}
