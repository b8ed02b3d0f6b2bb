// Package faults runs the agent's fault matrix: each way ct-client,
// ct-server or a path can fail mid-transfer, against each kind of app
// connection, on loopback with a real ct-server, ct-client and app-server
// in this process. It classifies what the app saw: intact, reset, an error
// status before any body, or short — a clean end (FIN) before the data's
// end, which an app cannot tell from a whole response and which must never
// happen (an HTTP/1.0 app would exit 0 with part of a file).
//
// Stops and crashes are the methods the CLI's signal handling calls:
// ct-client's SIGTERM is Client.Shutdown, ct-server's is Server.Shutdown;
// SIGKILL is ct-server's socket going silent (nothing more sent, not even
// its CONNECTION_CLOSE) and a new ct-server on the same port and identity
// 1 s later.
package faults

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
)

// Faults and app kinds of the matrix, in table order.
var (
	Faults = []string{"ct-client SIGTERM", "ct-server SIGTERM", "ct-server SIGKILL + restart", "path cut", "path black-hole"}
	Kinds  = []string{"HTTP/1.0, no length", "HTTP/1.1, Content-Length", "CONNECT tunnel"}
)

// Outcomes of a cell.
const (
	Intact = "intact"
	Reset  = "reset"
	Short  = "SHORT" // a clean end before the data's end: the failure
)

// size is each transfer's bytes; rate (ct-server's per-client limit)
// makes it last about 2 s, so every fault lands mid-transfer (at a third).
const (
	size = 6_000_000
	rate = 3 << 20
	// grace is the drain the stops are given: shorter than what is left
	// of the transfer, so a drain that ends in a reset is what is tested.
	grace = 300 * time.Millisecond
)

// Cell is one fault against one kind of app connection.
type Cell struct {
	Fault, Kind string
	Outcome     string // Intact, Reset, Short, or "status N" (refused before any body)
	Bytes       int64  // what the app got
	Detail      string
	Early       bool // the app's connection ended before the fault came
}

// OK: anything but a short body.
func (c Cell) OK() bool { return c.Outcome != Short }

// Run runs every cell (in parallel: each has its own processes' worth of
// agent) and returns them in table order.
func Run(ctx context.Context) ([]Cell, error) {
	cells := make([]Cell, len(Faults)*len(Kinds))
	errs := make([]error, len(cells))
	var wg sync.WaitGroup
	for i, f := range Faults {
		for j, k := range Kinds {
			n := i*len(Kinds) + j
			wg.Go(func() { cells[n], errs[n] = runCell(ctx, f, k, n) })
		}
	}
	wg.Wait()
	return cells, errors.Join(errs...)
}

// rig is one cell's agent: app-server, echo server, ct-server (restartable)
// and a ct-client of two paths.
type rig struct {
	pair     *selfsigned.Pair
	up       *http.Server
	upAddr   string
	echo     net.Listener
	srvAddr  string
	srv      *server.Server
	srvPC    *dropConn
	srvDone  chan error
	client   *agent.Client
	paths    []*dropConn
	proxy    net.Listener
	stopOnce sync.Once
}

// runCell: n numbers the cell, for its paths' loopback addresses.
func runCell(ctx context.Context, fault, kind string, n int) (Cell, error) {
	cell := Cell{Fault: fault, Kind: kind}
	r, err := newRig(n)
	if err != nil {
		return cell, err
	}
	defer r.close()
	at := make(chan struct{})
	var once sync.Once
	var reached atomic.Bool
	progress := func(got int64) {
		if got >= size/3 {
			reached.Store(true)
			once.Do(func() { close(at) })
		}
	}
	faulted := make(chan error, 1)
	go func() {
		select {
		case <-at:
			faulted <- r.inject(fault)
		case <-ctx.Done():
			faulted <- ctx.Err()
		}
	}()
	cell.Outcome, cell.Bytes, cell.Detail = r.app(ctx, kind, progress)
	cell.Early = !reached.Load()
	once.Do(func() { close(at) }) // the app ended before the fault: inject anyway, for the goroutine
	if err := <-faulted; err != nil {
		return cell, fmt.Errorf("%s: %w", fault, err)
	}
	return cell, nil
}

func newRig(n int) (*rig, error) {
	r := &rig{srvDone: make(chan error, 1)}
	var err error
	if r.pair, err = selfsigned.New(); err != nil {
		return nil, err
	}
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", origin.Handler(nil))
	mux.HandleFunc("/nocl/{n}", serveNoLength)
	r.up, r.upAddr = &http.Server{Handler: mux}, ul.Addr().String()
	go r.up.Serve(ul)
	if r.echo, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		r.close()
		return nil, err
	}
	go echo(r.echo)
	if err := r.startServer("127.0.0.1:0"); err != nil {
		r.close()
		return nil, err
	}
	var paths []agent.LocalPath
	for i := range 2 {
		paths = append(paths, agent.LocalPath{Name: fmt.Sprintf("p%d", i),
			Addr: netip.AddrFrom4([4]byte{127, 0, byte(30 + n), byte(1 + i)})})
	}
	c, err := agent.NewClient(agent.ClientConfig{Server: r.srvAddr, ServerName: "localhost",
		TLS: &tls.Config{RootCAs: r.pair.Pool}, Token: token, Paths: paths, ReconnectMax: 500 * time.Millisecond,
		ListenPacket: func(ip net.IP) (net.PacketConn, error) {
			pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
			if err != nil {
				return nil, err
			}
			d := &dropConn{PacketConn: pc}
			r.paths = append(r.paths, d)
			return d, nil
		}})
	if err != nil {
		r.close()
		return nil, err
	}
	r.client = c
	if r.proxy, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		r.close()
		return nil, err
	}
	go c.Serve(r.proxy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx, 2); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

const token = "fault-matrix-token-0123456789abcdef"

func (r *rig) startServer(addr string) error {
	s, err := server.NewServer(server.Config{
		TLS:     &tls.Config{Certificates: []tls.Certificate{r.pair.Cert}},
		Clients: []server.ClientAuth{{ID: "app", Token: token}},
		Allow:   []string{r.upAddr, r.echo.Addr().String()},
		Limits:  server.Limits{RateBytesPerSec: rate},
	})
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	r.srv, r.srvPC, r.srvAddr = s, &dropConn{PacketConn: pc}, pc.LocalAddr().String()
	go func() { r.srvDone <- s.Serve(r.srvPC) }()
	return nil
}

// inject makes the fault happen.
func (r *rig) inject(fault string) error {
	switch fault {
	case "ct-client SIGTERM":
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		r.client.Shutdown(ctx) // its error says what was reset
	case "ct-server SIGTERM":
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		r.srv.Shutdown(ctx)
		<-r.srvDone
		return r.restart()
	case "ct-server SIGKILL + restart":
		r.srvPC.dead.Store(true) // not another datagram, either way
		r.srv.Close()
		<-r.srvDone
		return r.restart()
	case "path cut":
		r.busiest().Close() // the interface is gone: its socket fails
	case "path black-hole":
		r.busiest().dead.Store(true)
	}
	return nil
}

// restart starts a new ct-server on the old one's port 1 s later.
func (r *rig) restart() error {
	time.Sleep(time.Second)
	return r.startServer(r.srvAddr)
}

// busiest is the path socket that received the most: the transfer's.
func (r *rig) busiest() *dropConn {
	best := r.paths[0]
	for _, p := range r.paths[1:] {
		if p.received.Load() > best.received.Load() {
			best = p
		}
	}
	return best
}

func (r *rig) close() {
	r.stopOnce.Do(func() {
		if r.client != nil {
			r.client.Close()
		}
		if r.srv != nil {
			r.srv.Close()
			<-r.srvDone
		}
		if r.up != nil {
			r.up.Close()
		}
		if r.echo != nil {
			r.echo.Close()
		}
	})
}

// app runs one app connection of kind through the proxy and classifies
// what it saw.
func (r *rig) app(ctx context.Context, kind string, progress func(int64)) (outcome string, got int64, detail string) {
	conn, err := net.Dial("tcp", r.proxy.Addr().String())
	if err != nil {
		return "error", 0, err.Error()
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	if kind == "CONNECT tunnel" {
		return tunnelApp(conn, br, r.echo.Addr().String(), progress)
	}
	u := fmt.Sprintf("http://%s/bytes/%d", r.upAddr, size)
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u, r.upAddr)
	if kind == "HTTP/1.0, no length" {
		u = fmt.Sprintf("http://%s/nocl/%d", r.upAddr, size)
		req = fmt.Sprintf("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", u, r.upAddr)
	}
	io.WriteString(conn, req)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return classify(err, 0, 0)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "status " + strconv.Itoa(resp.StatusCode), 0, resp.Header.Get("Ct-Error")
	}
	n, err := readPattern(resp.Body, 0, progress)
	if err == nil && n != size {
		return Short, n, "clean end"
	}
	return classify(err, n, size)
}

// tunnelApp sends size pattern bytes through a CONNECT to the echo server
// and reads them back.
func tunnelApp(conn net.Conn, br *bufio.Reader, target string, progress func(int64)) (string, int64, string) {
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return classify(err, 0, 0)
	}
	if resp.StatusCode != http.StatusOK {
		return "status " + strconv.Itoa(resp.StatusCode), 0, ""
	}
	werr := make(chan error, 1)
	go func() {
		// At the ct-server's rate: the echo comes back as fast as it goes.
		_, err := io.Copy(conn, io.LimitReader(&origin.Pattern{Size: size}, size))
		werr <- err
	}()
	n, err := readPattern(io.LimitReader(br, size), 0, progress)
	conn.Close()
	if w := <-werr; err == nil && n != size && errors.Is(w, syscall.ECONNRESET) {
		// Linux reports a reset to one call: here the writer's (the
		// reader then sees the end). The app saw the reset.
		err = w
	}
	if err == nil && n != size {
		return Short, n, "clean end"
	}
	return classify(err, n, size)
}

// readPattern reads origin's pattern from r, checking every byte.
func readPattern(r io.Reader, off int64, progress func(int64)) (int64, error) {
	buf := make([]byte, 64<<10)
	n := off
	for {
		k, err := r.Read(buf)
		for i := range k {
			if buf[i] != origin.PatternByte(n+int64(i)) {
				return n + int64(i), fmt.Errorf("byte %d differs", n+int64(i))
			}
		}
		n += int64(k)
		progress(n)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// classify names what ended an app connection after got of want bytes.
func classify(err error, got, want int64) (string, int64, string) {
	switch {
	case err == nil && got == want:
		return Intact, got, ""
	case errors.Is(err, syscall.ECONNRESET):
		return Reset, got, ""
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Short, got, "FIN: " + err.Error()
	}
	return "error", got, err.Error()
}

// serveNoLength writes /nocl/N: N pattern bytes with no Content-Length,
// flushed as they go (an HTTP/1.0 app reads it to the connection's end).
func serveNoLength(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
	if err != nil || n < 0 {
		http.Error(w, "bad length", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	p := &origin.Pattern{Size: n}
	for {
		k, err := p.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

// dropConn is a socket that can go silent (dead: every datagram dropped
// both ways, a black-holed link or a killed process) and counts what it
// received.
type dropConn struct {
	net.PacketConn
	dead     atomic.Bool
	received atomic.Int64
}

func (d *dropConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, a, err := d.PacketConn.ReadFrom(b)
		if err != nil || !d.dead.Load() {
			d.received.Add(int64(n))
			return n, a, err
		}
	}
}

func (d *dropConn) WriteTo(b []byte, a net.Addr) (int, error) {
	if d.dead.Load() {
		return len(b), nil
	}
	return d.PacketConn.WriteTo(b, a)
}

// Markdown is the matrix as agent/DESIGN.md's table.
func Markdown(cells []Cell) string {
	var b strings.Builder
	b.WriteString("| fault | " + strings.Join(Kinds, " | ") + " |\n|---|" + strings.Repeat("---|", len(Kinds)) + "\n")
	for i, f := range Faults {
		b.WriteString("| " + f)
		for j := range Kinds {
			c := cells[i*len(Kinds)+j]
			s := c.Outcome
			if c.Outcome != Intact {
				s += fmt.Sprintf(" at %.1f MB", float64(c.Bytes)/1e6)
			}
			if c.Early {
				s += ", before the fault"
			}
			b.WriteString(" | " + s)
		}
		b.WriteString(" |\n")
	}
	return b.String()
}
