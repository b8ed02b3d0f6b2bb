package emu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// The control endpoint is plain HTTP on a loopback TCP address or a unix
// socket ("unix:/path/to.sock"). It has no authentication, so it refuses to
// listen anywhere else.
//
//	GET  /stats                     → StatsReply as JSON
//	POST /paths/{path}/set          body: patch text, e.g. {down: {delay_ms: 60}}
//	POST /paths/{path}/outage?s=2   take the path down for 2 s
//
// Errors are a status ≥ 400 with a one-line text body.

// StatsReply is the body of GET /stats.
type StatsReply struct {
	TimeMs float64     `json:"t_ms"` // engine time
	Paths  []PathStats `json:"paths"`
	// FrontEnd holds the front end's own counters (the relay's unknown
	// sources, flows, ...), if it gave any.
	FrontEnd json.RawMessage `json:"front_end,omitempty"`
}

// ControlHandler serves the control API of e. frontEnd, if not nil, returns
// the front end's counters for GET /stats (anything encoding/json takes).
func ControlHandler(e *Engine, frontEnd func() any) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		reply := StatsReply{TimeMs: stats.Ms(e.Now()), Paths: e.Stats()}
		if frontEnd != nil {
			b, err := json.Marshal(frontEnd())
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			reply.FrontEnd = b
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(reply)
	})
	mux.HandleFunc("POST /paths/{path}/set", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p, err := ParseControlPatch(string(body))
		if err == nil {
			err = e.Apply(r.PathValue("path"), p)
		}
		if err != nil {
			http.Error(w, oneLine(err), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /paths/{path}/outage", func(w http.ResponseWriter, r *http.Request) {
		d, err := ParseOutageQuery(r.URL.RawQuery)
		if err != nil {
			http.Error(w, oneLine(err), http.StatusBadRequest)
			return
		}
		if err := e.Outage(r.PathValue("path"), d); err != nil {
			http.Error(w, oneLine(err), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Ranges the control API accepts (a scenario file is checked by the
// scenario package; a live change is also checked against these, so that a
// typo cannot wedge a running emulator: 1e308 ms of delay overflowed
// time.Duration to about zero).
const (
	MaxDelayMs     = 3600e3 // one hour, delay or jitter
	MinRateMbps    = 0.001  // 1 kbit/s (0 still means unlimited)
	MaxRateMbps    = 1e6    // 1 Tbit/s
	MaxQueuePkts   = 1 << 20
	MaxQueueBytes  = 1 << 30
	MaxOutageS     = 86400 // one day
	minOutageNanos = 1     // an outage shorter than a nanosecond is no outage
)

// ParseControlPatch parses the body of POST /paths/{path}/set and checks
// that every value it sets is within the control API's ranges.
func ParseControlPatch(text string) (*scenario.Patch, error) {
	p, err := scenario.ParsePatch(text)
	if err != nil {
		return nil, err
	}
	// Applying to a zero path leaves the fields the patch does not set at
	// zero, which every range below admits.
	np, err := p.Apply(scenario.Path{})
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name string
		l    scenario.Link
	}{{"up", np.Up}, {"down", np.Down}} {
		l := d.l
		switch {
		case l.DelayMs > MaxDelayMs:
			return nil, fmt.Errorf("%s.delay_ms: %g is more than %g (one hour)", d.name, l.DelayMs, float64(MaxDelayMs))
		case l.JitterMs > MaxDelayMs:
			return nil, fmt.Errorf("%s.jitter_ms: %g is more than %g (one hour)", d.name, l.JitterMs, float64(MaxDelayMs))
		case l.RateMbps != 0 && (l.RateMbps < MinRateMbps || l.RateMbps > MaxRateMbps):
			return nil, fmt.Errorf("%s.rate_mbps: %g is outside [%g, %g] (0 means unlimited)", d.name, l.RateMbps, MinRateMbps, float64(MaxRateMbps))
		case l.QueuePackets < 0 || l.QueuePackets > MaxQueuePkts:
			return nil, fmt.Errorf("%s.queue_packets: %d is outside [0, %d]", d.name, l.QueuePackets, MaxQueuePkts)
		case l.QueueBytes < 0 || l.QueueBytes > MaxQueueBytes:
			return nil, fmt.Errorf("%s.queue_bytes: %d is outside [0, %d]", d.name, l.QueueBytes, MaxQueueBytes)
		}
	}
	return p, nil
}

// ParseOutageQuery parses the query of POST /paths/{path}/outage: s, the
// outage in seconds, in (0, MaxOutageS].
func ParseOutageQuery(rawQuery string) (time.Duration, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, fmt.Errorf("outage: bad query: %v", err)
	}
	s, err := strconv.ParseFloat(q.Get("s"), 64)
	if err != nil || !(s > 0) || s > MaxOutageS {
		return 0, fmt.Errorf("outage: s must be a number of seconds in (0, %d]", MaxOutageS)
	}
	d := time.Duration(s * float64(time.Second))
	if d < minOutageNanos {
		return 0, fmt.Errorf("outage: s=%g is shorter than a nanosecond", s)
	}
	return d, nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// ListenControl opens the control listener: "unix:PATH", or HOST:PORT where
// HOST must be a loopback address (port 0 picks one).
func ListenControl(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return net.Listen("unix", path)
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("control address %q: want 127.0.0.1:PORT or unix:PATH", addr)
	}
	if !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("control address %q: must be a loopback address (the API has no authentication)", addr)
	}
	return net.Listen("tcp", addr)
}

// ServeControl serves h (a ControlHandler) on ln until ctx ends, then closes ln.
func ServeControl(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	defer close(served) // a Serve that fails ends the closer too
	go func() {
		select {
		case <-ctx.Done():
			srv.Close()
		case <-served:
		}
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ControlClient talks to a control endpoint.
type ControlClient struct {
	Addr string // as given to ListenControl
	hc   *http.Client
}

func (c *ControlClient) do(ctx context.Context, method, path, body string) ([]byte, error) {
	base, hc := "http://"+c.Addr, c.hc
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
		if sock, ok := strings.CutPrefix(c.Addr, "unix:"); ok {
			base = "http://unix"
			hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			}}
		}
		c.hc = hc
	} else if strings.HasPrefix(c.Addr, "unix:") {
		base = "http://unix"
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", c.Addr, err)
	}
	if resp.StatusCode >= 400 {
		return nil, errors.New(strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Stats fetches the counters.
func (c *ControlClient) Stats(ctx context.Context) (StatsReply, error) {
	var r StatsReply
	b, err := c.do(ctx, "GET", "/stats", "")
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// Apply sends a patch (text such as "{down: {delay_ms: 60}}") for path.
func (c *ControlClient) Apply(ctx context.Context, path, patch string) error {
	_, err := c.do(ctx, "POST", "/paths/"+url.PathEscape(path)+"/set", patch)
	return err
}

// Outage takes path down for d.
func (c *ControlClient) Outage(ctx context.Context, path string, d time.Duration) error {
	_, err := c.do(ctx, "POST", "/paths/"+url.PathEscape(path)+"/outage?s="+strconv.FormatFloat(d.Seconds(), 'f', -1, 64), "")
	return err
}
