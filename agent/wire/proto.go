package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// ALPN is the TLS application protocol of a ct-client/ct-server connection.
const ALPN = "hetquic-ct/1"

// Control paths (origin-form requests on a stream).
const (
	PathHello    = "/_ct/hello"
	PathPing     = "/_ct/ping"
	PathPrefetch = "/_ct/prefetch"
)

// Headers of the agent's own protocol.
const (
	HdrClient   = "Ct-Client"    // hello response: the authenticated client id
	HdrWantPush = "Ct-Want-Push" // hello request: push the prefetch list here
	HdrPushURL  = "Ct-Push-Url"  // push: the URL the pushed response is for
	HdrError    = "Ct-Error"     // error responses from ct-server: a short reason
	// hello response: the client's max_streams, which ct-client keeps to
	HdrMaxStreams = "Ct-Max-Streams"
	HdrMaxTunnels = "Ct-Max-Tunnels"
	// hello response: "1" if ct-server sends a stripe's pieces in the
	// order asked (HdrPiece); ct-client sends HdrPiece and counts on that
	// order only then, since a ct-server from before it sends a
	// connection's streams round-robin (and passes HdrPiece upstream).
	HdrPieceOrder = "Ct-Piece-Order"
)

// QUIC application error codes of the agent.
const (
	CodeOK           = 0x0
	CodeUnauthorized = 0x101 // hello missing or its token unknown
	CodeShutdown     = 0x102 // the peer is closing
	CodeStalled      = 0x103 // stream reset by ct-client after a stall
	CodeLimit        = 0x104 // stream reset by ct-server: a per-client limit
	CodeAborted      = 0x106 // stream reset by ct-server: the upstream response or tunnel broke
)

// DefaultUpstreamTimeout is ct-server's, and ct-client waits for a response
// head a little longer (so the app gets ct-server's 504, not a cut).
const (
	// DefaultUpstreamTimeout (ct-server, ServerConfig.UpstreamTimeout)
	// bounds dialling an app-server and waiting for its response head
	// after the whole request went to it: an app-server that accepts and
	// never answers would otherwise hold the stream's slot for ever; 30 s
	// is a patient browser's wait.
	DefaultUpstreamTimeout = 30 * time.Second
)

// MaxHeaderBytes bounds the request or response head (request line and
// headers) read from a stream or an app connection.
const MaxHeaderBytes = 64 << 10

// ErrHeaderTooLarge is returned when a head exceeds MaxHeaderBytes.
var ErrHeaderTooLarge = errors.New("agent: header too large")

// headLimiter passes at most n bytes before the head is parsed and
// everything after lift: the body of a request is not bounded by it.
type headLimiter struct {
	r io.Reader
	n int64 // < 0: lifted
}

func (l *headLimiter) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		return 0, ErrHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

func (l *headLimiter) lift() { l.n = -1 }

// HeadReader reads HTTP/1.1 messages from r with a bounded head.
type HeadReader struct {
	lim *headLimiter
	br  *bufio.Reader
}

// Rest is the stream after the head: what the head's reads buffered, then
// the rest (a tunnel's first bytes may arrive with its CONNECT).
func (h *HeadReader) Rest() *bufio.Reader { return h.br }

func NewHeadReader(r io.Reader) *HeadReader {
	lim := &headLimiter{r: r, n: MaxHeaderBytes}
	return &HeadReader{lim: lim, br: bufio.NewReaderSize(lim, 16<<10)}
}

// readRequest reads one request head; its body reads on without the bound.
func (h *HeadReader) ReadRequest() (*http.Request, error) {
	req, err := http.ReadRequest(h.br)
	if err != nil {
		if errors.Is(err, ErrHeaderTooLarge) {
			return nil, ErrHeaderTooLarge
		}
		return nil, err
	}
	for k := range req.Header {
		// http.ReadRequest keeps "Transfer-Encoding " (a space before the
		// colon) as a name of its own and frames the body without it; a
		// server behind that honours it would frame it otherwise
		// (smuggling). net/http's server refuses such names; so do we.
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("invalid header name %q", k)
		}
	}
	h.lim.lift()
	return req, nil
}

// readResponse reads one response head to req.
func (h *HeadReader) ReadResponse(req *http.Request) (*http.Response, error) {
	resp, err := http.ReadResponse(h.br, req)
	if err != nil {
		if errors.Is(err, ErrHeaderTooLarge) {
			return nil, ErrHeaderTooLarge
		}
		return nil, err
	}
	h.lim.lift()
	return resp, nil
}

// Kind is what a stream request asks of ct-server.
type Kind int

const (
	KindForward  Kind = iota + 1 // an app's HTTP request, absolute-form http://
	KindConnect                  // a CONNECT tunnel to host:port
	KindHello                    // /_ct/hello
	KindPing                     // /_ct/ping
	KindPrefetch                 // /_ct/prefetch?url=
	KindUDP                      // connect-udp (RFC 9298) to host:port; see udp.go
)

func (k Kind) String() string {
	switch k {
	case KindForward:
		return "forward"
	case KindConnect:
		return "connect"
	case KindHello:
		return "hello"
	case KindPing:
		return "ping"
	case KindUDP:
		return "udp"
	case KindPrefetch:
		return "prefetch"
	}
	return "unknown"
}

// Target is a parsed stream request: its kind and, for forwarding, the
// upstream "host:port" it needs (the allow-list key).
type Target struct {
	Kind     Kind
	Upstream string // lower-case host:port, for KindForward and KindConnect
	URL      string // KindPrefetch: the URL to fetch
}

// ParseTarget classifies a request read from a stream. It is the only place
// where ct-server decides what a stream is for, so every request that is not
// one of the forms in the package comment is an error here.
func ParseTarget(req *http.Request) (Target, error) {
	if req.Method == http.MethodConnect {
		hp, err := NormHostPort(req.RequestURI, "")
		if err != nil {
			return Target{}, fmt.Errorf("CONNECT target: %w", err)
		}
		return Target{Kind: KindConnect, Upstream: hp}, nil
	}
	u := req.URL
	if u == nil {
		return Target{}, errors.New("no URL")
	}
	if !u.IsAbs() {
		switch {
		case u.Path == PathHello && req.Method == http.MethodGet:
			return Target{Kind: KindHello}, nil
		case u.Path == PathPing && req.Method == http.MethodGet:
			return Target{Kind: KindPing}, nil
		case strings.HasPrefix(u.Path, UDPPathPrefix) && req.Method == http.MethodGet && strings.EqualFold(req.Header.Get("Upgrade"), UDPUpgrade):
			hp, err := ParseUDPPath(u.Path)
			if err != nil {
				return Target{}, err
			}
			return Target{Kind: KindUDP, Upstream: hp}, nil
		case u.Path == PathPrefetch && req.Method == http.MethodGet:
			raw := u.Query().Get("url")
			hp, err := UpstreamOf(raw)
			if err != nil {
				return Target{}, fmt.Errorf("prefetch url: %w", err)
			}
			return Target{Kind: KindPrefetch, Upstream: hp, URL: raw}, nil
		}
		return Target{}, fmt.Errorf("%s %q: not an absolute http:// URL nor a ct/1 control request", req.Method, u.Path)
	}
	hp, err := UpstreamOf(u.String())
	if err != nil {
		return Target{}, err
	}
	return Target{Kind: KindForward, Upstream: hp}, nil
}

// UpstreamOf returns the allow-list key of an absolute http:// URL.
func UpstreamOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("scheme %q: only http:// is forwarded (use CONNECT for TLS)", u.Scheme)
	}
	if u.User != nil {
		return "", errors.New("userinfo in URL not allowed")
	}
	return NormHostPort(u.Host, "80")
}

// NormHostPort lower-cases host:port, adding defPort when the port is
// missing (an error when defPort is empty).
func NormHostPort(hp, defPort string) (string, error) {
	if hp == "" {
		return "", errors.New("empty host")
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		if defPort == "" || strings.Contains(hp, "]") && !strings.HasPrefix(hp, "[") {
			return "", fmt.Errorf("%q: want host:port", hp)
		}
		host, port = strings.Trim(hp, "[]"), defPort
	}
	if host == "" || strings.ContainsAny(host, "/?#@ []") {
		return "", fmt.Errorf("%q: bad host", hp)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("%q: bad port", hp)
	}
	return net.JoinHostPort(strings.ToLower(host), strconv.Itoa(n)), nil
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1) a proxy drops.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func RemoveHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// ErrorResponse writes a short ct-server error response to w. reason is
// terse: what the app may know, never the server's internals (those go to
// the log).
func ErrorResponse(w io.Writer, code int, reason string) error {
	return ErrorResponseH(w, code, http.Header{}, reason)
}

// ErrorResponseH is ErrorResponse with extra headers h.
func ErrorResponseH(w io.Writer, code int, h http.Header, reason string) error {
	body := reason + "\n"
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set(HdrError, reason)
	resp := &http.Response{
		StatusCode:    code,
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: int64(len(body)),
		Body:          io.NopCloser(strings.NewReader(body)),
	}
	return resp.Write(w)
}

// MaxLanes bounds the QUIC connections a client opens per interface
// (agent.Lanes and the automatic lanes; ct-server counts a client's
// connections by it). A Reno/Cubic connection gets about 1.22 × MSS /
// (RTT × √loss) of a link that loses packets at random, 4 Mbit/s at 1 %
// and 30 ms, so the matrix's 40 Mbit/s lossy path would need about ten;
// eight is most of that (agent/lanes.go grows to it only while each lane
// added raises the interface's delivery), while each connection costs
// ct-server and ct-client CPU and memory, and beyond that the unfairness
// to other flows on the link outweighs the gain.
const MaxLanes = 8

// DefaultMaxConns is ct-server's default bound on one client's QUIC
// connections (server.Limits.MaxConns): two interfaces at MaxLanes each
// (a lossy interface grown to MaxLanes and the rest of a device's).
// ct-client's automatic lanes stay within it (agent/lanes.go).
const DefaultMaxConns = 2 * MaxLanes

// DefaultOutageHold is how long ct-client holds a request or tunnel whose
// paths all failed, waiting for one to come back, before the app gets a
// reset; ct-server keeps a detached tunnel session as long. A laptop
// between networks, a vehicle in a tunnel or a router's radio re-attaching
// loses every path for seconds; an app sees that as a stall it waits out,
// where a reset after a few seconds killed every download and tunnel.
const DefaultOutageHold = 30 * time.Second

// DefaultIdleTimeout is the agent's QUIC MaxIdleTimeout; keep-alives go
// every quarter of it.
const DefaultIdleTimeout = 20 * time.Second
