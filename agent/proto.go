// Package agent is the Cybertwin agent (Cybertwin paper §IV): a ct-client on
// the device that is a local HTTP proxy for app-clients, and a ct-server in
// the cloud that talks plain HTTP/TCP to the app-servers beside it. Between
// them the ct-client keeps one always-on QUIC connection per local interface;
// every app request rides its own QUIC stream on the connection a pathchoice.Scheduler
// picks, and a response whose connection stalls or dies carries on over
// another connection from the byte where it stopped (stream migration).
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
package agent

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

	"golang.org/x/net/http/httpguts"
)

// ALPN is the TLS application protocol of a ct-client/ct-server connection.
const ALPN = "hetquic-ct/1"

// Control paths (origin-form requests on a stream).
const (
	pathHello    = "/_ct/hello"
	pathPing     = "/_ct/ping"
	pathPrefetch = "/_ct/prefetch"
)

// Headers of the agent's own protocol.
const (
	hdrClient   = "Ct-Client"    // hello response: the authenticated client id
	hdrWantPush = "Ct-Want-Push" // hello request: push the prefetch list here
	hdrPushURL  = "Ct-Push-Url"  // push: the URL the pushed response is for
	hdrError    = "Ct-Error"     // error responses from ct-server: a short reason
	// hello response: the client's max_streams, which ct-client keeps to
	hdrMaxStreams = "Ct-Max-Streams"
	hdrMaxTunnels = "Ct-Max-Tunnels"
)

// QUIC application error codes of the agent.
const (
	codeOK           = 0x0
	codeUnauthorized = 0x101 // hello missing or its token unknown
	codeShutdown     = 0x102 // the peer is closing
	codeStalled      = 0x103 // stream reset by ct-client after a stall
	codeLimit        = 0x104 // stream reset by ct-server: a per-client limit
	codeAborted      = 0x106 // stream reset by ct-server: the upstream response or tunnel broke
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

// headReader reads HTTP/1.1 messages from r with a bounded head.
type headReader struct {
	lim *headLimiter
	br  *bufio.Reader
}

func newHeadReader(r io.Reader) *headReader {
	lim := &headLimiter{r: r, n: MaxHeaderBytes}
	return &headReader{lim: lim, br: bufio.NewReaderSize(lim, 16<<10)}
}

// readRequest reads one request head; its body reads on without the bound.
func (h *headReader) readRequest() (*http.Request, error) {
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
func (h *headReader) readResponse(req *http.Request) (*http.Response, error) {
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
		hp, err := normHostPort(req.RequestURI, "")
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
		case u.Path == pathHello && req.Method == http.MethodGet:
			return Target{Kind: KindHello}, nil
		case u.Path == pathPing && req.Method == http.MethodGet:
			return Target{Kind: KindPing}, nil
		case strings.HasPrefix(u.Path, udpPathPrefix) && req.Method == http.MethodGet && strings.EqualFold(req.Header.Get("Upgrade"), udpUpgrade):
			hp, err := parseUDPPath(u.Path)
			if err != nil {
				return Target{}, err
			}
			return Target{Kind: KindUDP, Upstream: hp}, nil
		case u.Path == pathPrefetch && req.Method == http.MethodGet:
			raw := u.Query().Get("url")
			hp, err := upstreamOf(raw)
			if err != nil {
				return Target{}, fmt.Errorf("prefetch url: %w", err)
			}
			return Target{Kind: KindPrefetch, Upstream: hp, URL: raw}, nil
		}
		return Target{}, fmt.Errorf("%s %q: not an absolute http:// URL nor a ct/1 control request", req.Method, u.Path)
	}
	hp, err := upstreamOf(u.String())
	if err != nil {
		return Target{}, err
	}
	return Target{Kind: KindForward, Upstream: hp}, nil
}

// upstreamOf returns the allow-list key of an absolute http:// URL.
func upstreamOf(raw string) (string, error) {
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
	return normHostPort(u.Host, "80")
}

// normHostPort lower-cases host:port, adding defPort when the port is
// missing (an error when defPort is empty).
func normHostPort(hp, defPort string) (string, error) {
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

func removeHopHeaders(h http.Header) {
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

// errorResponse writes a short ct-server error response to w. reason is
// terse: what the app may know, never the server's internals (those go to
// the log).
func errorResponse(w io.Writer, code int, reason string) error {
	return errorResponseH(w, code, http.Header{}, reason)
}

// errorResponseH is errorResponse with extra headers h.
func errorResponseH(w io.Writer, code int, h http.Header, reason string) error {
	body := reason + "\n"
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set(hdrError, reason)
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
