// Package origin is hetquic's HTTP/3 origin server: plain, unmodified
// quic-go, so that what PCM-QUIC and the Cybertwin agent achieve is measured
// against a server that knows nothing about them. It serves
//
//	/bytes/{n}  n bytes of a fixed pattern (Range requests supported)
//	/echo       the request body back
//
// and writes an access log line per request.
package origin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Limits on what one request may ask for, so that a client cannot make the
// server allocate or send without bound.
const (
	MaxBytes     = 1 << 30  // largest /bytes/{n}
	MaxEchoBytes = 64 << 20 // largest /echo body
)

// Handler serves /bytes/{n} and /echo and logs each request to log (nil:
// no log).
func Handler(log io.Writer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /bytes/{n}", serveBytes)
	mux.HandleFunc("POST /echo", serveEcho)
	if log == nil {
		return mux
	}
	return &accessLog{next: mux, w: log}
}

func serveBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
	if err != nil || n < 0 || n > MaxBytes {
		http.Error(w, fmt.Sprintf("bytes: n must be an integer in [0, %d]", int64(MaxBytes)), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	// ServeContent handles Range, If-Range and HEAD; the content is
	// generated, so a 1 GiB object costs no memory.
	http.ServeContent(w, r, "", time.Time{}, &Pattern{Size: n})
}

func serveEcho(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, MaxEchoBytes)
	w.Header().Set("Content-Type", "application/octet-stream")
	if _, err := io.Copy(w, body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			// Headers may be gone already; resetting the stream is all
			// that is left, and http3 does that when the handler panics
			// with ErrAbortHandler.
			panic(http.ErrAbortHandler)
		}
	}
}

// Pattern is an io.ReadSeeker over Size bytes where byte i is PatternByte(i):
// a client can check any range it receives without the server storing it.
type Pattern struct {
	Size int64
	off  int64
}

// PatternByte is byte i of every /bytes object.
func PatternByte(i int64) byte { return byte(i % 251) }

func (p *Pattern) Read(b []byte) (int, error) {
	if p.off >= p.Size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), p.Size-p.off))
	for i := range n {
		b[i] = PatternByte(p.off + int64(i))
	}
	p.off += int64(n)
	return n, nil
}

func (p *Pattern) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += p.off
	case io.SeekEnd:
		offset += p.Size
	default:
		return 0, errors.New("pattern: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("pattern: negative position")
	}
	p.off = offset
	return offset, nil
}

// accessLog writes one line per request: time, client address, method,
// path, status, body bytes, duration.
type accessLog struct {
	next http.Handler
	mu   sync.Mutex
	w    io.Writer
}

func (l *accessLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		l.mu.Lock()
		fmt.Fprintf(l.w, "%s %s %s %s %d %d %.3fms\n", start.UTC().Format(time.RFC3339Nano), r.RemoteAddr,
			r.Method, r.URL.RequestURI(), rec.status, rec.bytes, float64(time.Since(start).Microseconds())/1000)
		l.mu.Unlock()
	}()
	l.next.ServeHTTP(rec, r)
}

type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the http3 writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Server is a running origin.
type Server struct {
	h3   *http3.Server
	conn net.PacketConn
	done chan error
}

// Config configures Serve.
type Config struct {
	TLS *tls.Config // must hold a certificate; NextProtos is set to h3
	Log io.Writer   // access log; nil for none
	// QUIC overrides the QUIC settings (nil: quic-go's defaults, which
	// allow the client to migrate).
	QUIC *quic.Config
}

// Serve starts an origin on conn (a UDP socket, or an emulated one) and
// returns once it is serving. Close stops it and closes conn.
func Serve(conn net.PacketConn, cfg Config) (*Server, error) {
	if cfg.TLS == nil || (len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil) {
		return nil, errors.New("origin: a TLS certificate is required")
	}
	s := &Server{
		h3: &http3.Server{
			Handler:    Handler(cfg.Log),
			TLSConfig:  http3.ConfigureTLSConfig(cfg.TLS.Clone()),
			QUICConfig: cfg.QUIC,
		},
		conn: conn,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.h3.Serve(conn) }()
	return s, nil
}

// Addr is the address the origin listens on.
func (s *Server) Addr() net.Addr { return s.conn.LocalAddr() }

// Close stops serving: open connections are closed, the socket too, and
// the serving goroutine has ended when Close returns.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.h3.Shutdown(ctx)
	err := s.h3.Close()
	s.conn.Close()
	if serveErr := <-s.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, net.ErrClosed) {
		return serveErr
	}
	return err
}

// ServeTCP serves Handler(log) on l over HTTP/1.1 and HTTP/2 without TLS
// (h2c with prior knowledge): the plain app-server the Cybertwin agent's
// ct-server forwards to, and a TCP baseline. Close the returned server to
// stop it.
func ServeTCP(l net.Listener, log io.Writer) *http.Server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: Handler(log), ReadHeaderTimeout: 10 * time.Second, Protocols: &protos}
	go srv.Serve(l)
	return srv
}
