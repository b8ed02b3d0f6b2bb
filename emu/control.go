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
		p, err := scenario.ParsePatch(string(body))
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
		s, err := strconv.ParseFloat(r.URL.Query().Get("s"), 64)
		if err != nil || !(s > 0) || s > 1e6 {
			http.Error(w, "outage: s must be a positive number of seconds", http.StatusBadRequest)
			return
		}
		if err := e.Outage(r.PathValue("path"), time.Duration(s*float64(time.Second))); err != nil {
			http.Error(w, oneLine(err), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
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
	go func() {
		<-ctx.Done()
		srv.Close()
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
