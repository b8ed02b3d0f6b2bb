package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/localpath"
)

// LocalPath is one local interface: a name for logs and metrics and the
// address the path's socket binds to, so its packets leave through it.
type LocalPath struct {
	Name string
	Addr netip.Addr
	// Iface is the interface the address was taken from, when the user
	// named one ("wifi=wlan0"); "" when given as an address.
	Iface string
	// Role is RolePrimary (""), RoleBackup or RoleMetered; see pick.
	Role string
}

// Path roles. A backup path carries nothing while a primary path is up
// and not suspected (MPTCP's backup flag): it is the fallback when every
// primary fails. A metered path (a capped mobile plan) gets no requests of
// its own while a primary works either, but joins a striped download when
// its pieces shorten it (stripesched.Take): it carries what the primaries cannot
// carry fast enough, and nothing else. Both keep their connection up, so
// the move to them takes no handshake.
const (
	RolePrimary = ""
	RoleBackup  = "backup"
	RoleMetered = "metered"
)

// ParseLocalPath parses one path in localpath's grammar,
// [NAME=](ADDRESS|INTERFACE)[/ROLE], with ROLE backup or metered; an
// interface binds to its address by localpath's one rule.
func ParseLocalPath(s string) (LocalPath, error) {
	p, err := localpath.Parse(s, interfaceAddrs)
	if err != nil {
		return LocalPath{}, err
	}
	if p.Role != RolePrimary && p.Role != RoleBackup && p.Role != RoleMetered {
		return LocalPath{}, fmt.Errorf("path %q: role %q: want backup or metered", s, p.Role)
	}
	return LocalPath{Name: p.Name, Addr: p.Addr, Iface: p.Iface, Role: p.Role}, nil
}

// interfaceAddrs lists an interface's addresses (tests replace it).
var interfaceAddrs localpath.AddrsFunc = localpath.SystemAddrs

// interfaceAddr is the address a path over interface name binds to, by
// localpath's rule.
func interfaceAddr(name string) (netip.Addr, error) {
	addrs, loopback, err := interfaceAddrs(name)
	if err != nil {
		return netip.Addr{}, err
	}
	return localpath.Pick(name, addrs, loopback)
}

// Lanes returns paths with each interface repeated n times: lane 1 keeps
// the interface's name, lane k > 1 is named "NAME#k". Every lane is a QUIC
// connection of its own over that interface, with its own congestion
// controller. On a lossy link that is what lets the agent fill it: quic-go's
// Reno cuts its window to 0.7× on every random loss, so at 5 % loss and
// 30 ms RTT one connection gets about 2 of 2.5 Mbit/s (BENCHMARKS.md, agent
// experiment loss), where two are loss-limited at about twice that. The
// cost is two flows' share at a bottleneck shared with other hosts, which
// is why the default is one lane (the paper's one connection per
// interface) and ct-client adds lanes only to an interface whose loss is
// random (lanes.go). Lanes of one interface share its address; ct-client moves a
// failed stream to another interface before it tries a sibling lane.
func Lanes(paths []LocalPath, n int) ([]LocalPath, error) {
	if n < 1 || n > wire.MaxLanes {
		return nil, fmt.Errorf("connections per path %d: want 1 to %d", n, wire.MaxLanes)
	}
	var out []LocalPath
	for _, p := range paths {
		for k := 1; k <= n; k++ {
			name := p.Name
			if k > 1 {
				name = fmt.Sprintf("%s#%d", p.Name, k)
			}
			out = append(out, LocalPath{Name: name, Addr: p.Addr, Iface: p.Iface, Role: p.Role})
		}
	}
	return out, nil
}

var errUnauthorized = errors.New("ct-server refused the token (unauthorized)")

// path is one interface's always-on connection to ct-server.
type path struct {
	id int
	LocalPath
	pc net.PacketConn
	tr *quic.Transport

	mu           sync.Mutex
	conn         *quic.Conn
	suspectUntil time.Time
	lastRecv     time.Time // last response byte received on any stream
	outstanding  int64
	streams      int
	weight       int
	lastErr      string
	rate         float64       // EWMA delivery rate, bytes/s; see rateSample
	want         netip.Addr    // the address the path should use (invalid: its interface is gone)
	bound        netip.Addr    // the address pc is bound to (runPath's alone)
	checking     bool          // confirmDead runs (guarded by Client.mu)
	lastRTT      time.Duration // its last connection's smoothed RTT (0: never connected)
	sendStats    laneCounters  // ct-server's last sending counters for it (lanes.go)
	// inOrder: conn's ct-server advertised wire.HdrPieceOrder in its
	// hello; per path, as each connection may reach another ct-server
	// (of another version, behind one address).
	inOrder bool

	requests, bytes, stalls, reconnects, dialFailures atomic.Int64
	tunnels                                           atomic.Int64 // tunnels attached now

	// retired: ReloadPaths removed the path; it takes no new work and
	// stop ended its connection, so its transfers moved to the others.
	retired atomic.Bool
	stop    context.CancelFunc // ends runPath (set by startPath)
}

func (p *path) current() *quic.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn
}

func (p *path) received(n int, now time.Time) {
	p.bytes.Add(int64(n))
	p.mu.Lock()
	p.lastRecv = now
	p.mu.Unlock()
}

// rateAlpha is the EWMA weight of a new rate sample: a path's rate follows
// a change within a few samples (a few hundred kB).
const rateAlpha = 0.3

// rateSample records that the path received n bytes, on all its
// streams, in d while one of its streams was busy throughout: it delivers
// about n/d. A stream's own bytes times the path's count of streams read a
// path's rate up to 2.3 times too high: the count is taken at the sample's
// end, and streams requested during the sample, or waiting for their first
// byte, did not share the path for its whole span (fake time, 80/20 +
// 40/30 Mbit/s/ms: the 40 Mbit/s path's single sample of a warm-up read
// 2.5, 5.0, 8.4 or 11.7 MB/s with 1, 2, 3 or 4 streams counted, as the
// workers' requests and the sample's end fell at one fake instant).
func (p *path) rateSample(n int64, d time.Duration) {
	if d <= 0 {
		return
	}
	p.foldRate(float64(n) / d.Seconds())
}

// foldRate adds one sample r (bytes/s) to the path's EWMA rate.
func (p *path) foldRate(r float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate == 0 {
		p.rate = r
	} else {
		p.rate += rateAlpha * (r - p.rate)
	}
}

func (p *path) addLoad(out int64, streams, weight int) {
	p.mu.Lock()
	p.outstanding += out
	p.streams += streams
	p.weight += weight
	p.mu.Unlock()
}

// inOrderOn: conn, if it is still p's connection, reached a ct-server
// that keeps the piece order (path.inOrder).
func (p *path) inOrderOn(conn *quic.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn == conn && p.inOrder
}

// run keeps the path's connection up until ctx ends: dial, hello, wait for
// the connection to end, back off, again (Cybertwin §IV-B: always-on).
func (c *Client) runPath(ctx context.Context, p *path) {
	backoff := c.cfg.ReconnectMin
	for ctx.Err() == nil {
		if !c.rebind(ctx, p) {
			continue
		}
		conn, inOrder, err := c.dialPath(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.dialFailures.Add(1)
			p.mu.Lock()
			p.lastErr = err.Error()
			p.mu.Unlock()
			c.cfg.Log.Warn("path cannot connect", "path", p.Name, "err", err, "retry_in", backoff)
			if errors.Is(err, errUnauthorized) {
				backoff = c.cfg.ReconnectMax
			}
			if !wire.SleepCtx(ctx, backoff) {
				return
			}
			backoff = nextBackoff(backoff, c.cfg.ReconnectMax, p.wasUp() && !errors.Is(err, errUnauthorized))
			continue
		}
		up := time.Now()
		p.mu.Lock()
		p.conn, p.inOrder, p.lastErr, p.suspectUntil = conn, inOrder, "", failbackAt(up, p.reconnects.Load())
		p.mu.Unlock()
		c.cfg.Log.Info("path connected", "path", p.Name, "remote", conn.RemoteAddr().String(), "local", conn.LocalAddr().String())
		c.changed()
		var pushes sync.WaitGroup
		pushes.Go(func() { c.acceptPushes(conn) })
		pushes.Go(func() { c.watchTunnels(p, conn) })
		pushes.Go(func() { c.udp.Dispatch(c.ctx, conn) })
		select {
		case <-conn.Context().Done():
		case <-ctx.Done():
			conn.CloseWithError(wire.CodeShutdown, "ct-client closing")
		}
		pushes.Wait()
		p.mu.Lock()
		p.conn, p.lastRTT = nil, max(conn.ConnectionStats().SmoothedRTT, time.Nanosecond)
		p.lastErr = wire.ShortErr(context.Cause(conn.Context()))
		p.mu.Unlock()
		c.changed()
		if ctx.Err() != nil {
			return
		}
		p.reconnects.Add(1)
		c.cfg.Log.Warn("path connection lost", "path", p.Name, "err", context.Cause(conn.Context()))
		if time.Since(up) > 4*c.cfg.ReconnectMax {
			backoff = c.cfg.ReconnectMin // it was up a good while: start over
		}
		backoff = min(backoff, lostRetryMax)
		if !wire.SleepCtx(ctx, backoff) {
			return
		}
		backoff = nextBackoff(backoff, c.cfg.ReconnectMax, true)
	}
}

// A path that lost its connection is dialled again in short attempts,
// close together, so that its return is noticed within about a second
// and failback (FailbackHold) counts from then, not from the end of a
// long attempt begun while the network was away: a dial's Initial
// packets are resent ever more rarely (the handshake timer doubles), so
// the 4 s attempt of a first connection noticed a path's return up to
// 2 s late, and then backed off up to ReconnectMax more.
const (
	// lostDialMin is the shortest such attempt.
	lostDialMin = time.Second
	// lostDialRTTs: an attempt lasts this many of the path's last smoothed
	// round trips when that is longer than lostDialMin (a handshake and
	// the hello take 2–3 round trips; a satellite path's exceed 1 s).
	lostDialRTTs = 5
	// lostRetryMax caps the backoff between such attempts (and after the
	// loss): with lostDialMin the return is found within about 1.5 s, at
	// the cost of a few Initial packets a second while the path is down.
	lostRetryMax = 500 * time.Millisecond
)

// wasUp: p has had a connection (and lost it, or it is being dialled).
func (p *path) wasUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRTT > 0
}

// dialTimeout is how long a dial of p may take: full for a path never
// connected (a first contact may need every retransmission), short for
// one that lost its connection (lostDialMin, lostDialRTTs).
func (p *path) dialTimeout(full time.Duration) time.Duration {
	p.mu.Lock()
	rtt := p.lastRTT
	p.mu.Unlock()
	if rtt == 0 {
		return full
	}
	return min(full, max(lostDialMin, lostDialRTTs*rtt))
}

// nextBackoff doubles the redial backoff up to ceiling, or up to
// lostRetryMax for a path that lost its connection (lost); a refusal of
// its token is not lost (retrying it often helps nothing).
func nextBackoff(cur, ceiling time.Duration, lost bool) time.Duration {
	if lost {
		ceiling = min(ceiling, lostRetryMax)
	}
	return min(2*cur, ceiling)
}

// FailbackHold is how long a path that lost its connection and got a new
// one stays suspected (pathchoice.Choose and stripes give it no new work
// while another path is usable): a path must be healthy that long before
// requests and a stripe's pieces go back to it. Hysteresis, so that a path
// that flaps (seconds up, seconds down) carries nothing instead of losing
// every piece it is given; long enough to outlast such a flap and the
// stall detection of a second loss (StallTimeout 0.8 s and a ping), short
// against a transfer that would otherwise stay on a slower path.
const FailbackHold = 5 * time.Second

// failbackAt is when a path whose connection came up at up may get new
// work: at once on its first connection, FailbackHold later after a loss.
func failbackAt(up time.Time, losses int64) time.Time {
	if losses == 0 {
		return time.Time{}
	}
	return up.Add(FailbackHold)
}

// DefaultInterfacePoll is how often interfaces named in paths are looked
// up again: an address change costs at most this plus a move of the
// path's streams (a roaming phone changes address a few times an hour).
const DefaultInterfacePoll = 2 * time.Second

// watchInterfaces looks up the address of every path given by interface
// name each InterfacePoll. A changed address closes the path's connection
// (its streams move to other paths, as on a stall) and runPath binds a new
// socket to the new address and dials again; an interface that is gone,
// or has no usable address, keeps its path down until it is back.
func (c *Client) watchInterfaces(ctx context.Context) {
	tick := time.NewTicker(c.cfg.InterfacePoll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		for _, p := range c.activePaths() {
			if p.Iface == "" {
				continue
			}
			a, err := interfaceAddr(p.Iface)
			if err != nil {
				a = netip.Addr{}
			}
			p.mu.Lock()
			changed := a != p.want
			p.want = a
			conn := p.conn
			p.mu.Unlock()
			if !changed {
				continue
			}
			c.cfg.Log.Warn("interface changed; moving the path", "path", p.Name, "iface", p.Iface, "addr", a)
			if conn != nil {
				conn.CloseWithError(wire.CodeShutdown, "interface address changed")
			}
			c.changed()
		}
	}
}

// rebind makes p's socket match the address its interface has now; it
// reports whether the path may dial (false: no address yet, after a wait).
func (c *Client) rebind(ctx context.Context, p *path) bool {
	p.mu.Lock()
	want := p.want
	p.mu.Unlock()
	if want == p.bound {
		return true
	}
	if !want.IsValid() {
		wire.SleepCtx(ctx, c.cfg.InterfacePoll)
		return false
	}
	pc, err := c.cfg.ListenPacket(net.IP(want.AsSlice()))
	if err != nil {
		c.cfg.Log.Warn("path cannot bind its new address", "path", p.Name, "addr", want, "err", err)
		wire.SleepCtx(ctx, c.cfg.InterfacePoll)
		return false
	}
	p.tr.Close()
	p.pc.Close()
	p.pc, p.tr, p.bound = pc, &quic.Transport{Conn: pc}, want
	return true
}

// quicConfig is the QUIC configuration of ct-client's connections, one
// place for dialPath and the stripes' stream window (Client.streamWindow):
// the configured one with the agent's defaults, and 16 incoming streams
// that ct-server may open (its pushes: acceptPushes).
//
// Unless configured, each stream's receive window starts at
// wire.StreamWindow and quic-go's auto-tuning grows it to wire.DownWindow
// while the app reads it fast: a download on a far fast path needs more
// than 1 MiB per round trip (wire.DownWindow). It starts at the whole
// wire.StreamWindow, not quic-go's 512 KiB: while the window could not
// grow past 1 MiB, a striped download's pieces (fresh streams, which
// ct-server sends in turn) each waited for their window once per 512 KiB:
// 4.2–4.9 MB/s on a 65 Mbit/s path 120 ms away whose one stream alone ran
// at 6.5 (fake time; found by TestStripeSweep, guarded by
// TestStripeFarFastPathPieces). An unread stream holds at most
// wire.StreamWindow: the window grows only as it is read.
func (c *Client) quicConfig() *quic.Config {
	qc := wire.QUICConfig(c.cfg.QUIC, c.cfg.IdleTimeout, 16)
	if c.cfg.QUIC == nil || c.cfg.QUIC.MaxStreamReceiveWindow == 0 {
		qc.MaxStreamReceiveWindow = wire.DownWindow
	}
	if c.cfg.QUIC == nil || c.cfg.QUIC.InitialStreamReceiveWindow == 0 {
		qc.InitialStreamReceiveWindow = min(wire.StreamWindow, qc.MaxStreamReceiveWindow)
	}
	return qc
}

// dialPath connects p and says hello; inOrder: ct-server said it keeps
// the piece order (hello).
func (c *Client) dialPath(ctx context.Context, p *path) (conn *quic.Conn, inOrder bool, err error) {
	raddr, err := net.ResolveUDPAddr("udp", c.cfg.Server)
	if err != nil {
		return nil, false, fmt.Errorf("resolve %s: %w", c.cfg.Server, err)
	}
	tlsConf := c.cfg.TLS.Clone()
	if tlsConf == nil {
		tlsConf = &tls.Config{}
	}
	tlsConf.NextProtos = []string{wire.ALPN}
	tlsConf.MinVersion = tls.VersionTLS13
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = c.cfg.ServerName
	}
	if c.cfg.CAFile != "" {
		pool, err := identity.LoadCAFile(c.cfg.CAFile)
		if err != nil {
			return nil, false, err
		}
		tlsConf.RootCAs = pool
	}
	qc := c.quicConfig()
	if qc.MaxConnectionReceiveWindow == 0 {
		qc.InitialConnectionReceiveWindow, qc.MaxConnectionReceiveWindow = connWindow, connWindow
	}
	dctx, cancel := context.WithTimeout(ctx, p.dialTimeout(qc.HandshakeIdleTimeout+time.Second))
	defer cancel()
	conn, err = p.tr.Dial(dctx, raddr, tlsConf, qc)
	if err != nil {
		return nil, false, fmt.Errorf("dial %s: %w%s", c.cfg.Server, err, identity.ExplainDial(err, c.cfg.CAFile, wire.ALPN))
	}
	if inOrder, err = c.hello(dctx, conn); err != nil {
		conn.CloseWithError(wire.CodeOK, "")
		return nil, false, err
	}
	return conn, inOrder, nil
}

// hello says hello on conn and takes in ct-server's answer; inOrder: it
// advertised wire.HdrPieceOrder.
func (c *Client) hello(ctx context.Context, conn *quic.Conn) (inOrder bool, err error) {
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return false, fmt.Errorf("hello: %w", err)
	}
	defer str.CancelRead(wire.CodeOK)
	dl, _ := ctx.Deadline()
	str.SetDeadline(dl)
	req, _ := http.NewRequest(http.MethodGet, wire.PathHello, nil)
	req.Host = "ct"
	req.Header.Set("Authorization", "Bearer "+c.policy().Token)
	wantPush := c.cache != nil && c.pushAsked.CompareAndSwap(false, true)
	if wantPush {
		req.Header.Set(wire.HdrWantPush, "1")
	}
	if err := req.Write(str); err != nil {
		return false, fmt.Errorf("hello: %w", err)
	}
	str.Close()
	resp, err := wire.NewHeadReader(str).ReadResponse(req)
	if err != nil {
		var ae *quic.ApplicationError
		if errors.As(err, &ae) && ae.ErrorCode == wire.CodeUnauthorized {
			return false, errUnauthorized
		}
		if wantPush {
			c.pushAsked.Store(false)
		}
		return false, fmt.Errorf("hello: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if n, err := strconv.Atoi(resp.Header.Get(wire.HdrMaxStreams)); err == nil && n > 0 && n <= 1<<20 {
		c.setMaxStreams(n)
	}
	if n, err := strconv.Atoi(resp.Header.Get(wire.HdrMaxTunnels)); err == nil && n > 0 && n <= 1<<16 {
		c.gate.SetCapacity(n)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return false, fmt.Errorf("%w: %s", errUnauthorized, resp.Header.Get(wire.HdrError)) // ct-server's reason
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("hello: status %d", resp.StatusCode)
	}
	return resp.Header.Get(wire.HdrPieceOrder) == "1", nil
}

// acceptPushes stores what ct-server pushes on conn into the cache.
func (c *Client) acceptPushes(conn *quic.Conn) {
	for {
		rs, err := conn.AcceptUniStream(c.ctx)
		if err != nil {
			return
		}
		c.wg.Go(func() {
			rs.SetReadDeadline(time.Now().Add(c.cfg.IdleTimeout))
			u, resp, err := wire.ReadPush(rs)
			if err != nil || c.cache == nil {
				if err != nil {
					c.cfg.Log.Warn("push rejected", "err", err)
				}
				rs.CancelRead(wire.CodeOK)
				return
			}
			defer resp.Body.Close()
			rs.SetReadDeadline(time.Time{})
			if err := c.cache.Put(u, resp, time.Now()); err != nil {
				c.cfg.Log.Warn("push failed", "url", u, "err", err)
				rs.CancelRead(wire.CodeOK)
				return
			}
			c.pushed.Add(1)
		})
	}
}

// held: p gets no new work now (suspected, or back from a loss within
// FailbackHold).
func (p *path) held(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return now.Before(p.suspectUntil)
}

// watchTunnels checks a path that carries tunnels, or that is held (its
// hold must end on a connection that is alive, not on one that a second
// cut left idle and unnoticed): a tunnel may be
// silent for as long as its app likes, so no read timeout can tell a dead
// path from a quiet one. The judge is the transport, not the tunnels: any
// QUIC packet from ct-server (data, an ACK, a keep-alive) says the path
// lives, and an app that never reads its tunnels (their flow-control
// windows full, nothing more sent) cannot make a live path look dead.
// While tunnels are attached and no packet has arrived for StallTimeout/2,
// the path is probed below the streams (wire.TransportPing); no packet within
// StallTimeout of the last closes the connection, and its tunnels resume
// on another path.
func (c *Client) watchTunnels(p *path, conn *quic.Conn) {
	half := c.cfg.StallTimeout / 2
	tick := time.NewTicker(half)
	defer tick.Stop()
	seen, heard := conn.ConnectionStats().PacketsReceived, time.Now()
	for {
		select {
		case <-tick.C:
		case <-conn.Context().Done():
			return
		}
		if n := conn.ConnectionStats().PacketsReceived; n != seen {
			seen, heard = n, time.Now()
			continue
		}
		if (p.tunnels.Load() == 0 && !p.held(time.Now())) || time.Since(heard) < half {
			continue
		}
		wait := max(half, 2*conn.ConnectionStats().SmoothedRTT)
		if transportAlive(conn.Context(), conn, wait) {
			seen, heard = conn.ConnectionStats().PacketsReceived, time.Now()
			continue
		}
		if time.Since(heard) >= c.cfg.StallTimeout && conn.Context().Err() == nil {
			c.cfg.Log.Warn("tunnels' path silent and ping unanswered; closing it", "path", p.Name)
			c.suspect(p)
			conn.CloseWithError(wire.CodeStalled, "path stalled")
			return
		}
	}
}

// connWindow is the connection-level receive window ct-client grants each
// of its connections from the start. Bytes a stream has received and its
// app has not read hold the connection's window, not only the stream's: an
// app that never reads its tunnels (each holds at most wire.StreamWindow) once
// filled quic-go's default window (512 KiB, growing only as bytes are
// read) and stopped every other stream of the connection, its requests,
// its tunnels' 200s. Twice ct-server's default per-client memory budget
// (server.DefaultLimits.MaxBufferBytes, 96 MiB): the bytes ct-server can
// have in flight to this client's unread tunnels are bounded by that
// budget, so they take at most half. It is credit, not memory: only bytes
// that arrive and wait for a reader take memory, and each stream bounds
// those.
const connWindow = 2 * serverBufferBytes

// serverBufferBytes is ct-server's default per-client buffer limit
// (ct-client does not import ct-server; TestConnWindowCoversServerBudget
// checks the two agree).
const serverBufferBytes = 96 << 20
