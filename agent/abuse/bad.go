package abuse

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/wire"
)

// badClient is the misbehaving authenticated client: it speaks ct/1 over
// raw quic-go connections, so it can do what ct-client never would.
type badClient struct {
	addr, ca, token, up string
	cfg                 Config
	logf                func(string, ...any)

	wg      sync.WaitGroup
	mu      sync.Mutex
	streams []*quic.Stream
	conns   []*quic.Conn
	trs     []*quic.Transport

	conns0, streams0, tunnels0, hints0, handshakes0, cycles0 atomic.Int64
}

func (b *badClient) tls() (*tls.Config, error) {
	pool, err := identity.LoadCAFile(b.ca)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{wire.ALPN}}, nil
}

// run starts every kind of abuse and returns at once; close ends it.
func (b *badClient) run(ctx context.Context) {
	tc, err := b.tls()
	if err != nil {
		b.logf("abuse: %v", err)
		return
	}
	// Connections that say hello: more than max_conns. (Before the
	// hello-less flood, which would crowd them out of the pre-auth caps.)
	var conns []*quic.Conn
	tr, err := b.transport(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		b.logf("abuse: %v", err)
		return
	}
	for range b.cfg.Conns {
		c, err := b.hello(ctx, tr, tc)
		if err != nil {
			continue
		}
		conns = append(conns, c)
	}
	b.conns0.Store(int64(len(conns)))
	if b.cfg.Handshakes > 0 {
		b.wg.Go(func() { b.handshakes(ctx, tc) })
	}
	b.logf("abuse: %d of %d connections accepted", len(conns), b.cfg.Conns)
	if len(conns) == 0 {
		return
	}
	big := fmt.Sprintf("http://%s/bytes/%d", b.up, b.cfg.BigBytes)
	hint := "/_ct/prefetch?url=" + url.QueryEscape(fmt.Sprintf("http://%s/bytes/100000", b.up))
	sem := make(chan struct{}, 512) // stream attempts in flight, all kinds
	launch := func(i int, head, body string, want int, count *atomic.Int64) {
		c := conns[i%len(conns)]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		b.wg.Go(func() {
			defer func() { <-sem }()
			if b.stream(ctx, c, head, body, want) {
				count.Add(1)
			}
		})
	}
	for i := range min(b.cfg.Cycles, cycleWorkers) {
		c := conns[i%len(conns)]
		b.wg.Go(func() { b.cycle(ctx, c) })
	}
	for i := 0; i < max(b.cfg.Streams, b.cfg.Tunnels, b.cfg.Hints) && ctx.Err() == nil; i++ {
		if i < b.cfg.Streams {
			launch(i, "GET "+big+" HTTP/1.1\r\nHost: "+b.up+"\r\n\r\n", "", http.StatusOK, &b.streams0)
		}
		if i < b.cfg.Tunnels {
			launch(i, "CONNECT "+b.up+" HTTP/1.1\r\nHost: "+b.up+"\r\nCt-Session: new\r\n\r\n",
				fmt.Sprintf("GET /bytes/%d HTTP/1.1\r\nHost: x\r\n\r\n", b.cfg.BigBytes), http.StatusOK, &b.tunnels0)
		}
		if i < b.cfg.Hints {
			launch(i, "GET "+hint+" HTTP/1.1\r\nHost: ct\r\n\r\n", "", http.StatusAccepted, &b.hints0)
		}
	}
}

func (b *badClient) transport(ip netip.Addr) (*quic.Transport, error) {
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: pc}
	b.mu.Lock()
	b.trs = append(b.trs, tr)
	b.mu.Unlock()
	return tr, nil
}

func (b *badClient) dial(ctx context.Context, tr *quic.Transport, tc *tls.Config) (*quic.Conn, error) {
	raddr, err := net.ResolveUDPAddr("udp", b.addr)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := tr.Dial(dctx, raddr, tc, &quic.Config{HandshakeIdleTimeout: 3 * time.Second, MaxIdleTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.conns = append(b.conns, c)
	b.mu.Unlock()
	return c, nil
}

// hello dials and authenticates; an error when ct-server refuses.
func (b *badClient) hello(ctx context.Context, tr *quic.Transport, tc *tls.Config) (*quic.Conn, error) {
	c, err := b.dial(ctx, tr, tc)
	if err != nil {
		return nil, err
	}
	head := "GET /_ct/hello HTTP/1.1\r\nHost: ct\r\nAuthorization: Bearer " + b.token + "\r\n\r\n"
	s, code, err := b.send(ctx, c, head, "")
	if err != nil {
		return nil, err
	}
	s.CancelRead(0)
	if code != http.StatusOK {
		return nil, fmt.Errorf("hello: %d", code)
	}
	return c, nil
}

// send opens a stream, sends head and body, and reads the response head.
func (b *badClient) send(ctx context.Context, c *quic.Conn, head, body string) (*quic.Stream, int, error) {
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := c.OpenStreamSync(octx)
	if err != nil {
		return nil, 0, err
	}
	s.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Write([]byte(head + body)); err != nil {
		s.CancelRead(0)
		s.CancelWrite(0)
		return nil, 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(s, 512), nil)
	if err != nil {
		s.CancelRead(0)
		s.CancelWrite(0)
		return nil, 0, err
	}
	s.SetDeadline(time.Time{})
	return s, resp.StatusCode, nil
}

// stream sends one request and, if ct-server takes it (status want),
// keeps the stream open without reading its body until close.
func (b *badClient) stream(ctx context.Context, c *quic.Conn, head, body string, want int) bool {
	s, code, err := b.send(ctx, c, head, body)
	if err != nil {
		return false
	}
	if code != want {
		s.CancelRead(0)
		s.CancelWrite(0)
		return false
	}
	b.mu.Lock()
	b.streams = append(b.streams, s)
	b.mu.Unlock()
	return true
}

// handshakes completes QUIC handshakes that never say hello, from
// cfg.Sources loopback addresses, 64 at a time.
func (b *badClient) handshakes(ctx context.Context, tc *tls.Config) {
	var trs []*quic.Transport
	for i := range b.cfg.Sources {
		tr, err := b.transport(netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + i%250)}))
		if err != nil {
			b.logf("abuse: handshake source: %v", err)
			return
		}
		trs = append(trs, tr)
	}
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := 0; i < b.cfg.Handshakes && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := b.dial(ctx, trs[i%len(trs)], tc); err == nil {
				b.handshakes0.Add(1)
			}
		})
	}
	wg.Wait()
}

// close ends every stream, connection and socket of the client.
func (b *badClient) close() {
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.streams {
		s.CancelRead(0)
		s.CancelWrite(0)
	}
	for _, c := range b.conns {
		c.CloseWithError(0, "")
	}
	for _, tr := range b.trs {
		tr.Close()
		tr.Conn.Close()
	}
}

func (b *badClient) counts() Counts {
	return Counts{Conns: b.conns0.Load(), Streams: b.streams0.Load(), Tunnels: b.tunnels0.Load(),
		Hints: b.hints0.Load(), Handshakes: b.handshakes0.Load(), Cycles: b.cycles0.Load()}
}

// cycleWorkers is how many short tunnels the cycling abuse keeps going.
const cycleWorkers = 8

// cycle opens short CONNECT tunnels one after another until ctx ends or
// cfg.Cycles have been run by all workers: each downloads CycleBytes, reads
// them all and closes. ct-server keeps each finished tunnel's replay
// buffer for the session grace, so a client cycling
// tunnels makes it hold rate × grace × buffer: Report.PeakReserved shows
// whether that memory is counted against memory_budget.
func (b *badClient) cycle(ctx context.Context, c *quic.Conn) {
	head := "CONNECT " + b.up + " HTTP/1.1\r\nHost: " + b.up + "\r\nCt-Session: new\r\n\r\n"
	req := fmt.Sprintf("GET /bytes/%d HTTP/1.1\r\nHost: x\r\n\r\n", b.cfg.CycleBytes)
	for ctx.Err() == nil && b.cycles0.Load() < int64(b.cfg.Cycles) {
		s, code, err := b.sendKeep(ctx, c, head, req)
		if err != nil {
			sleep(ctx, 10*time.Millisecond)
			continue
		}
		if code == http.StatusOK {
			resp, err := http.ReadResponse(s.br, nil)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
			}
			if err == nil {
				b.cycles0.Add(1)
			}
		} else {
			sleep(ctx, 10*time.Millisecond) // refused by a limit: back off a little
		}
		s.s.Close()
		s.s.CancelRead(0)
	}
}

// keptStream is a stream whose reader read the response head and may hold
// the start of what follows.
type keptStream struct {
	s  *quic.Stream
	br *bufio.Reader
}

// sendKeep is send that keeps the head's reader for the bytes after it.
func (b *badClient) sendKeep(ctx context.Context, c *quic.Conn, head, body string) (keptStream, int, error) {
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := c.OpenStreamSync(octx)
	if err != nil {
		return keptStream{}, 0, err
	}
	s.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.Write([]byte(head + body)); err != nil {
		s.CancelRead(0)
		s.CancelWrite(0)
		return keptStream{}, 0, err
	}
	br := bufio.NewReader(s)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		s.CancelRead(0)
		s.CancelWrite(0)
		return keptStream{}, 0, err
	}
	return keptStream{s, br}, resp.StatusCode, nil
}
