// Package pcm is PCM-QUIC's client (PCM journal §3.3–3.4): one QUIC
// connection to an unmodified HTTP/3 server that, request by request, moves
// between the host's local interfaces, measures each request's task
// completion time, and learns with pathsel which interface serves best.
//
// Migration uses quic-go's client path API (Conn.AddPath, Path.Probe,
// Path.Switch, Path.Close). Its budgets shape the design (measured facts in
// README, "PCM-QUIC on quic-go"):
//   - every added path spends one of the connection IDs the server issued
//     (four), returned only when the path is closed;
//   - a quic-go server tracks at most three client paths besides the active
//     one and ignores probes beyond them for five seconds;
//   - Switch resets the RTT estimate and congestion state.
//
// So the client keeps a small working set of validated paths (MaxPaths,
// counting the active one), probes a path only to switch to it at once,
// closes the least recently used to make room, probes with a deadline, and
// never waits on the network without one.
package pcm

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/internal/pauseclock"
	"github.com/hetquic/hetquic/internal/resume"
	"github.com/hetquic/hetquic/pathsel"
)

// LocalPath is one local interface: a name for reports and the address a
// socket binds to so that its packets leave through that interface.
type LocalPath struct {
	Name string
	Addr netip.Addr
}

// Config configures Dial.
type Config struct {
	// Server is the origin's host:port; ServerName its TLS name.
	Server     string
	ServerName string
	// Paths are the local interfaces (default: DiscoverPaths, every
	// non-loopback address of the host). One that cannot be bound is left
	// out with a warning; Dial fails only when none can.
	Paths []LocalPath
	TLS   *tls.Config // RootCAs etc.; NextProtos is set to h3
	QUIC  *quic.Config
	// Selector decides the path of each Get (default: a selector of
	// Strategy with a random source seeded from Seed).
	Selector pathsel.Selector
	// Strategy configures the default selector (zero: pathsel.Default()).
	Strategy pathsel.Config
	Seed     uint64
	// PerByte makes Get report TCT per byte (PCM Eq. 4) to the selector
	// instead of TCT (Eq. 3): for tasks of mixed sizes.
	PerByte bool
	// MaxPaths is the most paths kept validated at once, the active one
	// included (default 4). A switch follows every probe, and a switch
	// makes the server retire the other paths and issue new connection
	// IDs, so four fit quic-go's budgets; what does not fit is probing
	// several paths without switching (a third blocks: README).
	MaxPaths int
	// ProbeTimeout bounds a path validation (default 1 s).
	ProbeTimeout time.Duration
	// StallTimeout is the floor of the stall timeout: the least time
	// the server may acknowledge nothing new while a request waits before
	// its path counts as failed, the connection moves to the best live
	// path and the requests that can be replayed are retried there
	// (default DefaultStallTimeout). On slower paths the stall waits
	// longer: for a poke's ACK, two probe timeouts (pcm/stall.go says
	// why).
	StallTimeout time.Duration
	// DownBackoff is how long a failed path rests before it is tried again
	// (default 2 s, doubling while it keeps failing, at most 1 min).
	DownBackoff time.Duration
	// FastSwitch switches to a path validated earlier without probing it
	// again. It saves the probe's round trip, but the server, which forgets
	// the client's other addresses at every switch, keeps answering on the
	// old path until it has validated the new one, so the first responses
	// after a switch travel (and are measured) on the wrong path.
	FastSwitch bool
	// Rebind keeps one connection ID and only changes the source address
	// when switching, as the PCM paper does, instead of quic-go's path API
	// with a fresh connection ID per path (RFC 9000 §9.5). See multiConn
	// for what it gives up.
	Rebind bool
	// ListenPacket opens the socket of a local path (default: UDP on ip:0),
	// as the agent's does: tests pass emu/memnet's in-memory network, whose
	// fake time under testing/synctest makes probe, stall and failover
	// tests fast and deterministic.
	ListenPacket func(ip net.IP) (net.PacketConn, error)
	// Probes configures the side probes of idle paths (on by default with
	// two or more paths and the default selector; Probes.Off turns them
	// off).
	Probes Probes
	// Now is the clock of the measurements (default time.Now).
	Now func() time.Time
	// Logf receives warnings (default: Logger's Warn when Logger is set,
	// else discarded).
	Logf func(format string, args ...any)

	// As http3.Transport's fields of the same names, for the HTTP/3 layer
	// of the connection: EnableDatagrams (RFC 9297; it turns QUIC
	// datagrams on), MaxResponseHeaderBytes, DisableCompression, Logger.
	EnableDatagrams        bool
	MaxResponseHeaderBytes int
	DisableCompression     bool
	Logger                 *slog.Logger

	// avoid names the paths a Transport's previous connection to the
	// server found down: its redial tries them last (dialOrder).
	avoid map[string]bool
	// side marks a side probe's connection (SideProber), which runs no
	// stall detector (SideProber.side says why).
	side bool
	// newTicker makes the stall detector's ticker (nil: a time.Ticker);
	// tests pause it (TestNoFalseStallAfterPause).
	newTicker func(every time.Duration) pauseclock.Ticker
}

func (c *Config) setDefaults() error {
	if len(c.Paths) == 0 {
		paths, err := DiscoverPaths()
		if err != nil {
			return err
		}
		c.Paths = paths
	}
	if c.Strategy.Strategy == "" {
		c.Strategy = pathsel.Default()
	}
	if c.MaxPaths == 0 {
		c.MaxPaths = 4
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = time.Second
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.DownBackoff == 0 {
		c.DownBackoff = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Probes.setDefaults()
	if c.ListenPacket == nil {
		c.ListenPacket = func(ip net.IP) (net.PacketConn, error) {
			return net.ListenUDP("udp", &net.UDPAddr{IP: ip})
		}
	}
	if c.Logf == nil && c.Logger != nil {
		l := c.Logger
		c.Logf = func(format string, args ...any) { l.Warn(fmt.Sprintf(format, args...)) }
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// Client is one PCM-QUIC connection. Its methods are safe for concurrent
// use; requests in flight at the same time share the active path (begin
// says when the connection may move).
type Client struct {
	cfg Config
	// sess is the connection; a redial (failStalled) replaces it.
	sess   atomic.Pointer[session]
	multi  *multiConn      // rebind mode's socket; nil in the default mode
	rebind *quic.Transport // rebind mode's transport
	// rx counts what each path received: which path carried a response.
	rx *rxLedger
	// local maps the client's sockets to their paths (moveWatch, redial).
	local *localIndex
	// wake is an idle stream whose priority changes wake quic-go's run
	// loop to apply a Switch (awaitMove); wakeUrgent alternates. Both
	// belong to the current session and are used with the switch token.
	wake       *quic.SendStream
	wakeUrgent bool
	remote     *net.UDPAddr
	// life ends when the client has ended: its connection ended and no
	// redial replaced it (watchSessions); its cause is the connection's.
	life context.Context
	end  context.CancelCauseFunc
	// closed is set by Close (under mu): no redial may follow.
	closed bool

	// mu guards the path state, flights and switching, briefly: a request
	// in flight does not hold it, and the connection moves only when no
	// request waits on the network (begin), or when a path stalls
	// (failStalled). switching is set while a
	// switch (or a failover, or an admission) is under way, and closed
	// when it ends: a request that arrives meanwhile waits for at most that
	// one switch (lockSwitch).
	mu        sync.Mutex
	switching chan struct{}
	// lastBusySwitch is when the connection last moved with requests in
	// flight: a failover (followSettle). burstUntil ends the followSettle
	// window after it; burstOpen counts the flights that took off within
	// such a window and have not landed, burstLanded is when the last of
	// them landed (racedBusySwitchLocked). dialBurst says that the latest
	// such burst was of requests held by the dial (heldByDial).
	lastBusySwitch time.Time
	burstUntil     time.Time
	burstOpen      int
	burstLanded    time.Time
	dialBurst      bool
	// behindEnd is the latest end of a response whose request took off
	// behind the latest busy switch's burst, while it was landing
	// (behindBurstLocked).
	behindEnd time.Time
	// lastTakeOff is the latest flight to take off, bunchStart when the
	// first of its bunch did, and openBunch the latest bunch
	// (bunchLocked).
	lastTakeOff *flight
	bunchStart  time.Time
	openBunch   *bunch
	// drained, while a request drains the connection for a switch under
	// load (drainLocked), is closed by the last flight to land; lastDrain
	// is when the last drain began (drainEvery).
	drained chan struct{}
	// movedAt is when the connection last moved (movedLocked).
	movedAt   time.Time
	lastDrain time.Time
	// lastLanded is when a flight last landed (wantsDrainLocked).
	lastLanded time.Time
	// drainedFrom is the path the last drain left (-1 before any): a
	// drain back to it, a re-probe's return, is not rate-limited.
	drainedFrom int
	// wantRun counts the requests in a row that asked for path wantTo
	// (wantsDrainLocked).
	wantTo, wantRun int
	paths           []*pathState
	active          int
	// failingOver says a failover is under way (failStalled), and
	// afterFailover that its stay may still hold (stayAfterFailover);
	// staySampled that a credited sample of the path it stays on has come
	// back since the failover, which ends the stay.
	failingOver   bool
	afterFailover atomic.Bool
	staySampled   bool
	flights       map[*flight]struct{} // requests waiting on the network
	// heads counts the flights that wait for a response head
	// (maySwitchLocked).
	heads int
	// holds are the requests waiting for another's switch (begin): they
	// count toward the active path's silence as flights do, or a switch
	// whose probe times out would hide a stall of the active path for the
	// probe's length and add it to the held requests' failover.
	holds map[*hold]struct{}
	// watch wakes the stall detector when it sleeps (detectStalls): a
	// flight, a hold or a path down gives it something to watch.
	watch chan struct{}
	// turns counts, per urgency, the replays that hold a turn (turn);
	// turnsHeld is their total, read without c.mu; turnMoved is closed
	// and replaced whenever one is released (awaitTurn).
	turns     [replayLevels]int
	turnsHeld atomic.Int32
	turnMoved chan struct{}
	// ranked counts, per urgency, the flights the latest failover
	// (generation rankGen) ended whose replays have not taken their
	// turns yet, until rankedUntil (rankLocked); turnsHeld counts them.
	ranked      [replayLevels]int
	rankGen     uint64
	rankedUntil time.Time
	// rankOpen says, per rank of the latest failover, whether that
	// replay has its stream (or will not ask for one); rankNext is the
	// first rank that has not: the replays ranked after it wait
	// (awaitTurn).
	rankOpen []bool
	rankNext int
	// detected is closed when detectStalls has returned: Close waits for
	// it, so that a failover under way when the client closes (its log
	// lines, its redial) ends before Close returns. Nil until Dial starts
	// the detector.
	detected chan struct{}
	// migration is false when the server forbade it or AddPath failed:
	// the client then stays where it is.
	migration bool
	// pin is the path a server that does not follow switches keeps
	// sending to (notFollowed); -1 while the server follows.
	pin      int
	pinUntil time.Time // when the pin is re-tested (pinHold)
	// unfollowedRun counts unfollowed responses carried by path
	// unfollowedTo since the server last followed elsewhere (notFollowed).
	unfollowedRun int
	unfollowedTo  int

	// probing says the side probes run (startProbes): they, not the
	// revival checks, bring a path that is down back; prober runs them.
	probing bool
	prober  *AsyncProber

	// bg counts the goroutines that outlive a call: the side probes
	// (runProbes, with the side connections it closes as it ends) and a
	// failover's redial. Close waits for them, so that none runs on after
	// it — none logs through Config.Logf, holds a socket, or dials, once
	// the caller has let the client go (a side connection on a cut path
	// logged through a test's t.Logf after the test had ended).
	bg sync.WaitGroup

	selMu sync.Mutex // guards the selector
	sel   pathsel.Selector
	// switches counts the moves of the connection, so that RoundTrip can
	// tell whether a response it measured stayed on one path.
	switches atomic.Int64
	// unfollowed counts responses that arrived on a path other than the
	// one their request was sent on (Stats).
	unfollowed atomic.Int64
}

// session is one QUIC connection of a Client and what belongs to it: a
// redial replaces the whole of it at once, so a reader that took it sees
// one connection's parts.
type session struct {
	conn  *quic.Conn
	h3    *http3.ClientConn
	dial  *quic.Transport // the handshake's socket (default mode)
	moves *moveWatch      // when a switch took effect; nil in rebind mode
	// prioritized: a replay has sent an RFC 9218 Priority field on this
	// connection (priorityField says why that matters).
	prioritized atomic.Bool
	// replaced is set when a failover took a new connection and closed
	// this one (failStalled): a response body still open on it, which the
	// caller was not reading then, resumes on its next read as a body
	// under a stall does (measuredBody.Read).
	replaced atomic.Pointer[PathStalledError]
}

// s is the client's current session.
func (c *Client) s() *session { return c.sess.Load() }

type pathState struct {
	LocalPath
	tr *quic.Transport
	// qp is the quic-go path; nil for a path never probed or closed
	// (including the one the connection was dialled on, until it is left).
	qp        *quic.Path
	validated bool
	removed   bool // RemovePath: never used again
	lastUsed  time.Time
	// down is set when the path failed; it rests until retryAt, and then
	// comes back when a revival check (checkPath, running while checking)
	// completes a handshake on it.
	down     bool
	checking bool
	retryAt  time.Time
	backoff  time.Duration
	// probedRTT is the latest round trip a side probe measured on it
	// (validateWait).
	probedRTT time.Duration
	// knownRTT is the latest round trip measured on it: a side probe's
	// (probedRTT), or the connection's least (quic-go's MinRTT) when it
	// left the path, which the probes skip while the connection is on it.
	// A failover moves to the live path of the least (firstChoiceLocked).
	knownRTT time.Duration
	// probe is what the side probe of it asked and not answered yet left
	// (probe.out zero: none); probeLate reads it, and probeAnswer judges
	// its loss by it (silenceTellsLocked). probedAt is when its latest
	// answered side probe came back: what shows that the server ran, and
	// answered on this path, while a probe went unanswered.
	probe    pathMark
	probedAt time.Time
}

// Dial opens one socket per local path and the QUIC connection on
// whichever path completes a handshake first: the paths are tried in
// their order, each dialStagger after the one before (RFC 8305's
// connection attempt delay) or at once when the one before failed, and the
// first handshake that completes wins (raceDial). Rebind mode, whose one
// socket moves between paths, dials on the first path only.
//
// Its errors name what was wrong: the server address, a Config that
// cannot work, no local path that binds, the handshake.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.Server == "" {
		return nil, errors.New("pcm: Config.Server is empty: want host:port")
	}
	remote, err := net.ResolveUDPAddr("udp", cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("pcm: server %q: %w", cfg.Server, err)
	}
	c := &Client{cfg: cfg, remote: remote, migration: true, pin: -1, drainedFrom: -1, sel: cfg.Selector,
		flights: map[*flight]struct{}{}, holds: map[*hold]struct{}{}, watch: make(chan struct{}, 1),
		turnMoved: make(chan struct{})}
	c.life, c.end = context.WithCancelCause(context.Background())
	local, socks, err := c.bindPaths()
	if err != nil {
		return nil, err
	}
	c.local = local
	c.rx = newRxLedger(len(c.paths))
	var sess *session
	if cfg.Rebind {
		sess, err = c.dialRebind(ctx, socks)
	} else {
		var won int
		sess, won, err = c.raceDial(ctx, c.paths, dialOrder(c.paths, cfg.avoid))
		c.active = won
	}
	if err != nil {
		c.end(err)
		c.closeTransports()
		return nil, err
	}
	c.sess.Store(sess)
	if cfg.Rebind {
		c.checkRebindAllowed()
	}
	c.paths[c.active].validated = true
	c.paths[c.active].lastUsed = cfg.Now()
	if c.sel == nil {
		if c.sel, err = pathsel.New(cfg.Strategy, newRand(cfg.Seed)); err != nil {
			c.Close()
			return nil, fmt.Errorf("pcm: Config.Strategy: %w", err)
		}
		for i := range c.paths {
			c.sel.AddPath(pathsel.PathID(i))
		}
	}
	c.startProbes() // before the detector, which reads c.probing
	if !cfg.side {
		c.detected = make(chan struct{})
		go c.detectStalls()
	}
	go c.watchSessions()
	return c, nil
}

// dialRebind dials rebind mode's one connection, on the first path.
func (c *Client) dialRebind(ctx context.Context, socks []net.PacketConn) (*session, error) {
	c.multi = newMultiConn(socks, c.rx)
	c.rebind = &quic.Transport{Conn: c.multi}
	tlsConf, qconf := c.handshakeConfigs()
	conn, err := c.rebind.Dial(ctx, c.remote, tlsConf, qconf)
	if err != nil {
		return nil, fmt.Errorf("pcm: dial %s via %s: %w", c.cfg.Server, c.paths[0].Name, err)
	}
	return c.newSession(conn, nil, nil), nil
}

// newSession wraps a connection that completed its handshake.
func (c *Client) newSession(conn *quic.Conn, dial *quic.Transport, moves *moveWatch) *session {
	h3 := (&http3.Transport{
		EnableDatagrams:        c.cfg.EnableDatagrams,
		MaxResponseHeaderBytes: c.cfg.MaxResponseHeaderBytes,
		DisableCompression:     c.cfg.DisableCompression,
		Logger:                 c.cfg.Logger,
	}).NewClientConn(conn)
	return &session{conn: conn, h3: h3, dial: dial, moves: moves}
}

// watchSessions ends the client (done, cause) when its connection ends
// and no redial has replaced it: a redial stores the new session before
// it closes the old one.
func (c *Client) watchSessions() {
	for {
		s := c.s()
		<-s.conn.Context().Done()
		if c.s() == s {
			c.end(context.Cause(s.conn.Context()))
			return
		}
	}
}

// handshakeConfigs are the TLS and QUIC configurations of the handshake:
// the caller's, with h3 as the protocol.
func (c *Client) handshakeConfigs() (*tls.Config, *quic.Config) {
	tlsConf := c.cfg.TLS.Clone()
	if tlsConf == nil {
		tlsConf = &tls.Config{}
	}
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = c.cfg.ServerName
	}
	qconf := &quic.Config{}
	if c.cfg.QUIC != nil {
		qconf = c.cfg.QUIC.Clone()
	}
	if c.cfg.EnableDatagrams {
		qconf.EnableDatagrams = true // as http3.Transport does
	}
	return tlsConf, qconf
}

// checkRebindAllowed turns rebind mode's migration off when the server
// sent disable_active_migration (RFC 9000 §9, §18.2): a client must then
// not send from another address. Rebind mode never calls AddPath to move,
// so it asks AddPath only for quic-go's verdict on the server's
// parameters; a path that is never probed spends no connection ID, and it
// is closed at once.
func (c *Client) checkRebindAllowed() {
	p, err := c.s().conn.AddPath(c.rebind)
	if err != nil {
		c.migration = false
		c.cfg.Logf("pcm: WARNING: migration unavailable (%v); staying on path %s for good", err, c.paths[0].Name)
		return
	}
	p.Close()
}

// bindPaths opens one socket per local path; a path whose address cannot
// be bound (an interface that went down) is left out with a warning.
func (c *Client) bindPaths() (*localIndex, []net.PacketConn, error) {
	local := &localIndex{}
	var socks []net.PacketConn
	var errs []error
	for _, lp := range c.cfg.Paths {
		udp, err := c.cfg.ListenPacket(lp.Addr.AsSlice())
		if err != nil {
			c.cfg.Logf("pcm: WARNING: path %s left out: bind %s: %v", lp.Name, lp.Addr, err)
			errs = append(errs, fmt.Errorf("path %s: bind %s: %w", lp.Name, lp.Addr, err))
			continue
		}
		local.set(udp.LocalAddr(), len(c.paths))
		socks = append(socks, udp)
		c.paths = append(c.paths, &pathState{LocalPath: lp, tr: &quic.Transport{Conn: udp}})
	}
	if len(c.paths) == 0 {
		return nil, nil, fmt.Errorf("pcm: no local path can be bound: %w", errors.Join(errs...))
	}
	return local, socks, nil
}

// Paths lists the client's local paths; PathID i is Paths()[i].
func (c *Client) Paths() []LocalPath {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]LocalPath, len(c.paths))
	for i, p := range c.paths {
		out[i] = p.LocalPath
	}
	return out
}

// Active is the index of the path the connection uses now.
func (c *Client) Active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

// Done is closed when the client has ended: its connection closed by
// either side, timed out idle, or lost, and not replaced by a redial (a
// failover that finds no path that validates dials anew: failStalled). A
// Client is then of no further use (Transport dials anew); Err says why.
func (c *Client) Done() <-chan struct{} { return c.life.Done() }

// Err is why the connection ended, or nil while it is alive.
func (c *Client) Err() error {
	ctx := c.s().conn.Context()
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// Stats counts what the client saw of the server's behaviour.
type Stats struct {
	// Unfollowed counts responses that arrived on another path than the
	// one their request was sent on: switches the server did not follow
	// (none of them gave the selector a sample).
	Unfollowed int64
	// Pinned is the path the client stays on since the server was found
	// not to follow switches (notFollowedLimit in a row), or -1; the pin
	// lasts pinHold at most, ends when its path goes down, and ClearPin
	// ends it at once.
	Pinned int
	// ProbeBytes is what the side probes (Config.Probes) have sent and
	// received so far, handshakes included; 0 when they do not run.
	ProbeBytes uint64
}

// Stats reports the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Unfollowed: c.unfollowed.Load(), Pinned: c.pinnedLocked()}
	if c.prober != nil {
		st.ProbeBytes = c.prober.Bytes()
	}
	return st
}

// Close closes the connection and every socket, its side probes' too, and
// returns once nothing of the client runs on (its probes, a failover's
// redial): none logs through Config.Logf after it.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true // no redial after this
	c.mu.Unlock()
	err := c.s().conn.CloseWithError(0, "")
	c.closeTransports()
	if c.detected != nil {
		<-c.detected // the connection's end ends it (watchSessions)
	}
	c.bg.Wait() // they end with the connection too
	return err
}

func (c *Client) closeTransports() {
	if c.multi != nil {
		c.rebind.Close()
		c.multi.Close()
		return
	}
	c.mu.Lock()
	paths := c.paths
	c.mu.Unlock()
	for _, p := range paths {
		p.tr.Close()
		p.tr.Conn.Close()
	}
	if s := c.s(); s != nil {
		closeDial(s)
	}
}

// closeDial closes a session's handshake socket (default mode).
func closeDial(s *session) {
	if s.dial != nil {
		s.dial.Close()
		s.dial.Conn.Close()
	}
}

// Result is one request's measurement (PCM journal §3.2, Eq. 3–4).
type Result struct {
	// Chosen is the path the selector (or GetOn's caller) asked for, -1
	// through RoundTrip when the selector was not asked (choose: every
	// path down, or right after a failover); Path the one the request
	// that completed was sent on: they differ when the connection could
	// not or did not move (a failed probe, a path resting, other requests
	// in flight, migration refused).
	Chosen   int
	Path     int
	PathName string
	// Carrier is the path that received most of the new bytes of the
	// requests' streams while the request was in flight (rxLedger), -1
	// when none came. Carrier ≠ Path means the server did not follow the
	// switch: the response was measured on no single path and the
	// selector got no sample.
	Carrier int
	// Credited says the selector got this request's sample (Get and
	// Transport; GetOn leaves crediting to its caller).
	Credited bool
	StreamID quic.StreamID
	Status   int
	// Start is when the request was made (GetOn called), Est when its
	// request stream was created (after any switch), End when the
	// response's FIN arrived; TotalBytes counts the response body.
	Start      time.Time
	Est, End   time.Time
	TotalBytes int64
	// Switched says the connection moved to Path for this request.
	Switched bool
	// Failovers counts paths given up during the request.
	Failovers int
	// bunch is the bunch the request took off in (bunchLocked), or nil.
	bunch *bunch
}

// Followed reports whether the response came back on the path its request
// was sent on (or nothing says otherwise).
func (r Result) Followed() bool { return r.Carrier < 0 || r.Carrier == r.Path }

// TCT is the task completion time, EndTime − EstTime (Eq. 3).
func (r Result) TCT() time.Duration { return r.End.Sub(r.Est) }

// Wait is what the caller waited, End − Start: TCT plus the switch's probe
// and validation and any failover before the stream that completed.
func (r Result) Wait() time.Duration { return r.End.Sub(r.Start) }

// Sample is what a selector learns from: TCT in ms, or per byte (Eq. 4).
func (r Result) Sample(perByte bool) float64 {
	ms := float64(r.TCT()) / float64(time.Millisecond)
	if perByte {
		return ms / float64(max(r.TotalBytes, 1))
	}
	return ms
}

// Get fetches target (a path such as "/bytes/5120") on the path the
// selector chooses, writes the body to w (nil: discard), and reports the
// sample to the selector when the response came back on the path it was
// sent on (credit).
func (c *Client) Get(ctx context.Context, target string, w io.Writer) (Result, error) {
	c.reviveRested()
	p, err := c.choose()
	if err != nil {
		return Result{}, err
	}
	if p < 0 {
		return c.GetOn(ctx, c.Active(), target, w) // the selector not asked (choose): no sample
	}
	res, err := c.GetOn(ctx, p, target, w)
	if err != nil {
		return res, err
	}
	return res, c.credit(&res)
}

// checkTarget refuses what is not an origin-form request target
// (RFC 9110 §7.1): Get("bytes/14") would otherwise be glued to the port.
func checkTarget(target string) error {
	if !strings.HasPrefix(target, "/") {
		return fmt.Errorf("pcm: target %q: want a path that starts with / (such as /bytes/14)", target)
	}
	return nil
}

// GetOn fetches target on path p — the experiment runner's entry, where
// the selector lives outside the client. If p cannot be used (migration
// refused, probe failed, path down) the request goes on the active path and
// Result.Path says so; a response that stalls is retried on another path
// from the byte where it stopped, at each stall, on the budget of a body
// read through RoundTrip (resumeCount).
func (c *Client) GetOn(ctx context.Context, p int, target string, w io.Writer) (Result, error) {
	if p < 0 || p >= c.numPaths() {
		return Result{}, fmt.Errorf("pcm: no path %d", p)
	}
	if err := checkTarget(target); err != nil {
		return Result{}, err
	}
	if w == nil {
		w = io.Discard
	}
	start := c.cfg.Now()
	var res Result
	var switched bool
	var received int64
	var st *resume.State // set once the first response head has arrived
	var unfed resumeCount
	born, urgency := time.Now(), freshUrgency
	var t *turn // a replay's (awaitTurn)
	defer func() { t.release() }()
	for attempt := 0; ; attempt++ {
		want := p
		if attempt > 0 {
			want = -1 // the stall detector chose the path
		}
		c.awaitTurn(ctx, urgency, t)
		active, sw, f := c.begin(ctx, want, born)
		if attempt == 0 {
			switched = sw
		}
		r, n, err := c.fetch(f, active, target, received, &st, w, urgency, t)
		c.land(f)
		f.cancel(nil)
		received += n
		unfed.fed(n)
		if attempt == 0 {
			res = r
			res.bunch = c.bunchOf(f)
		}
		res.Path, res.PathName, res.StreamID, res.Status = r.Path, r.PathName, r.StreamID, r.Status
		res.End, res.TotalBytes, res.Carrier = r.End, received, r.Carrier
		res.Start, res.Chosen = start, p
		if err == nil || (f.stalled() != nil && whole(st, received)) {
			c.forgoRank(f)
			res.Switched, res.Failovers = switched, attempt
			return res, nil
		}
		if f.stalled() == nil || ctx.Err() != nil || c.Err() != nil || !unfed.take(c, err, target) {
			c.forgoRank(f)
			return res, err
		}
		urgency, t = c.replayUrgency(f), c.takeTurn(f)
		c.cfg.Logf("pcm: stream %d: %v; resuming from byte %d", r.StreamID, err, received)
	}
}

// whole says that a download whose path stalled had already received all
// of its declared length: the path died between the body's last byte and
// the stream's end. Asking for the rest would ask for nothing (a Range
// from the end, which servers refuse with 416), so the download is
// complete. A length the server never declared is never assumed.
func whole(st *resume.State, received int64) bool {
	return st != nil && st.Total >= 0 && received == st.Total
}

// copyBufs recycles the response copy buffers: requests are small and many.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// fetch sends one GET on the active path, asking for the bytes from offset
// on, with the urgency a failover gave it (priorityField), releases its
// turn t once it has a stream (awaitTurn), and copies the
// body to w. It returns the bytes copied. *st is the
// download's resume state: nil until a response head has arrived, which
// fetch then records; a later fetch resumes only the same version from
// exactly offset (internal/resume), so a resource replaced mid-download is
// an error, never a spliced body.
func (c *Client) fetch(f *flight, active int, target string, offset int64, st **resume.State, w io.Writer, urgency int8, t *turn) (res Result, n int64, err error) {
	res = Result{Path: active, PathName: c.pathName(active), Carrier: -1}
	ctx := f.ctx
	defer func() {
		if ps := f.stalled(); ps != nil && err != nil {
			err = ps
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.authority()+target, nil)
	if err != nil {
		return res, 0, err
	}
	if *st != nil {
		(*st).Prepare(req.Header, resume.Range{First: offset, Last: -1})
	}
	sess := c.s() // the one begin admitted f on: a redial replaces it only after failing f
	if pr := priorityField(sess, urgency); pr != "" {
		req.Header.Set("Priority", pr)
	}
	str, err := sess.h3.OpenRequestStream(ctx)
	t.release() // the replays behind it may ask for theirs (awaitTurn)
	if err != nil {
		return res, 0, err
	}
	res.Est = c.cfg.Now() // EstTime: the stream exists (PCM Eq. 3)
	res.StreamID = str.StreamID()
	sess.moves.watch(res.StreamID)
	var buf [inlinePaths]int64
	rx := c.rx.snapshotTo(buf[:0])
	defer func() {
		if err == nil { // the body's end has arrived: its last bytes count in this window
			sess.moves.awaitCounted(res.StreamID, sess.conn.Context().Done(), ctx.Done())
		}
		res.Carrier = c.rx.carrierSince(rx)
		// A request that left before the switch to this path took effect
		// was carried, and measured, on the old path: say so.
		if p, early := sess.moves.leftEarly(res.StreamID); early {
			res.Path, res.PathName = p, c.pathName(p)
		}
	}()
	// The stall detector ends f's context: the stream is abandoned then.
	stop := context.AfterFunc(ctx, func() {
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	})
	defer stop()
	if err := str.SendRequestHeader(req); err != nil {
		return res, 0, err
	}
	str.Close() // no body: send FIN
	resp, err := str.ReadResponse()
	if err != nil {
		return res, 0, err
	}
	res.Status = resp.StatusCode
	discard := int64(0)
	if *st == nil {
		s := resume.Start(resp)
		*st = &s
	} else if discard, err = (*st).Check(resp, offset); err != nil {
		resp.Body.Close()
		return res, 0, err
	}
	n, err = copyBody(w, resp.Body, discard)
	res.End = c.cfg.Now() // EndTime: the FIN has arrived
	return res, n, err
}

func (c *Client) authority() string {
	if c.cfg.ServerName != "" {
		_, port, _ := net.SplitHostPort(c.cfg.Server)
		return net.JoinHostPort(c.cfg.ServerName, port)
	}
	return c.cfg.Server
}

// copyBody copies body to w, dropping its first skip bytes.
func copyBody(w io.Writer, body io.ReadCloser, skip int64) (int64, error) {
	defer body.Close()
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		k, err := body.Read(buf)
		if k > 0 {
			chunk := buf[:k]
			if skip > 0 {
				d := min(skip, int64(k))
				chunk, skip = chunk[d:], skip-d
			}
			if _, werr := w.Write(chunk); werr != nil {
				return n, werr
			}
			n += int64(len(chunk))
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
