package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/origin"
)

// The matrix's outage rows, on cutMix: a cut of the best path (time until
// a striped download is back on it after it returns, against
// agent.FailbackHold + cutFailbackSlack) and a cut of every path (a
// download, a CONNECT tunnel and an upload in flight complete intact).
// The rates are low so that the rows stay short in a bench run.
var cutMix = matrixMix{"cut", []mixPath{{40, 20, 0}, {10, 40, 0}}, ""}

const (
	// cutAt is when the cut begins after the transfers start: they are
	// under way on every path by then.
	cutAt = time.Second
	// cutFailbackSlack: the best path must carry the download again
	// within FailbackHold plus this after it returns (a redial, and a
	// piece's round trip).
	cutFailbackSlack = 2 * time.Second
	// cutBackBytes is what the best path must deliver after its return
	// to count as carrying the download again: more than its handshake,
	// keep-alives and probes, less than 0.1 s of its rate.
	cutBackBytes = 256 << 10
	// cutSample is how often the best path's bytes are read.
	cutSample = 50 * time.Millisecond
	// cutUploadBytes is the upload in flight across the all-path cut,
	// sent at cutUploadRate by its app so that the cut lands mid-body.
	cutUploadBytes = 4 << 20
	cutUploadRate  = 2 << 20 // bytes a second
	// cutObject is the download and the tunnel's object in the all-path
	// row: it outlasts cutAt at the mix's summed rate (50 Mbit/s).
	cutObject = 12 << 20
)

// CutConfig is the outage rows' run.
type CutConfig struct {
	Cut  time.Duration // how long the paths stay dark (0: 10 s)
	Seed uint64
	Log  *slog.Logger
}

// CutRow is one outage row.
type CutRow struct {
	Case   string  `json:"case"`
	Intact string  `json:"intact"`           // what completed intact, or what failed
	TotalS float64 `json:"total_s"`          // until every transfer ended
	BackS  float64 `json:"back_s,omitempty"` // best-path cut: from its return until the download was back on it (-1: never)
	BoundS float64 `json:"bound_s,omitempty"`
}

// RunCuts runs the two outage rows.
func RunCuts(ctx context.Context, cfg CutConfig) ([]CutRow, error) {
	if cfg.Cut <= 0 {
		cfg.Cut = 10 * time.Second
	}
	best, err := cutBest(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("best-path cut: %w", err)
	}
	all, err := cutAll(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("all-path cut: %w", err)
	}
	return []CutRow{best, all}, nil
}

// cutBest cuts p0 (40 of 50 Mbit/s) under a striped download big enough
// to last until FailbackHold + cutFailbackSlack after its return, and
// times its return to carrying the download.
func cutBest(ctx context.Context, cfg CutConfig) (CutRow, error) {
	sc, err := cutMix.scenario()
	if err != nil {
		return CutRow{}, err
	}
	e, err := newEnv(ctx, envConfig{Scenario: sc, Seed: cfg.Seed, Log: cfg.Log})
	if err != nil {
		return CutRow{}, err
	}
	defer e.Close()
	bound := agent.FailbackHold + cutFailbackSlack
	// What p1 alone carries until the bound, what both carry before the
	// cut, and 4 s of both after it: the download is still running when
	// p0 should be back.
	size := int64(((cutAt+cfg.Cut+bound).Seconds()*10 + (cutAt+4*time.Second).Seconds()*50) * 1e6 / 8)
	row := CutRow{Case: fmt.Sprintf("%v cut of the best path (%s), striped %d MB download", cfg.Cut, cutMix.describe(), size>>20),
		BoundS: bound.Seconds(), BackS: -1}
	eng := e.relay.Engine()
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := e.get(ctx, "app", size); done <- err }()
	if !wire.SleepCtx(ctx, cutAt) {
		return row, ctx.Err()
	}
	if err := eng.Outage("p0", cfg.Cut); err != nil {
		return row, err
	}
	back := time.Now().Add(cfg.Cut)
	var atReturn uint64
	tick := time.NewTicker(cutSample)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			row.TotalS = time.Since(start).Seconds()
			row.Intact = intact("download", err)
			return row, nil
		case <-ctx.Done():
			return row, ctx.Err()
		case now := <-tick.C:
			if now.Before(back) || row.BackS >= 0 {
				continue
			}
			got := eng.Stats()[0].Down.BytesOut
			if atReturn == 0 {
				atReturn = got
			}
			if got-atReturn >= cutBackBytes {
				row.BackS = now.Sub(back).Seconds()
			}
		}
	}
}

// intact is "what" when err is nil, else what failed and why.
func intact(what string, err error) string {
	if err != nil {
		return fmt.Sprintf("%s FAILED: %v", what, err)
	}
	return what
}

// cutAll cuts every path for cfg.Cut while a download, a CONNECT tunnel
// and an upload are in flight.
func cutAll(ctx context.Context, cfg CutConfig) (CutRow, error) {
	sc, err := cutMix.scenario()
	if err != nil {
		return CutRow{}, err
	}
	e, err := newEnv(ctx, envConfig{Scenario: sc, Seed: cfg.Seed, Log: cfg.Log})
	if err != nil {
		return CutRow{}, err
	}
	defer e.Close()
	row := CutRow{Case: fmt.Sprintf("%v cut of every path (%s): %d MB download, %d MB tunnel, %d MB upload",
		cfg.Cut, cutMix.describe(), cutObject>>20, cutObject>>20, cutUploadBytes>>20)}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	start := time.Now()
	wg.Go(func() { _, errs[0] = e.get(ctx, "dl", cutObject) })
	wg.Go(func() { errs[1] = e.tunnelGet(ctx, cutObject) })
	wg.Go(func() { errs[2] = e.upload(ctx, cutUploadBytes) })
	if wire.SleepCtx(ctx, cutAt) {
		eng := e.relay.Engine()
		for _, p := range sc.Paths {
			if err := eng.Outage(p.Name, cfg.Cut); err != nil {
				return row, err
			}
		}
	}
	wg.Wait()
	row.TotalS = time.Since(start).Seconds()
	var parts []string
	for i, what := range []string{"download", "tunnel", "upload"} {
		parts = append(parts, intact(what, errs[i]))
	}
	row.Intact = strings.Join(parts, ", ")
	return row, ctx.Err()
}

// tunnelGet opens a CONNECT tunnel through the proxy to the app-server
// and GETs size bytes over it, checking every byte.
func (e *env) tunnelGet(ctx context.Context, size int64) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.proxyL.Addr().String())
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	host := strings.TrimPrefix(e.upURL, "http://")
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s: tunnel\r\n\r\n", host, host, AppHeader)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("CONNECT: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("CONNECT: %s", resp.Status)
	}
	fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", size, host)
	if resp, err = http.ReadResponse(br, nil); err != nil {
		return fmt.Errorf("tunnel GET: %w", err)
	}
	defer resp.Body.Close()
	n, err := checkPattern(resp.Body)
	if err != nil || n != size {
		return fmt.Errorf("tunnel GET: %d of %d bytes (%v)", n, size, err)
	}
	return nil
}

// upload POSTs size bytes of origin's pattern to /sink, sent at
// cutUploadRate, and checks the app-server got them all intact. An
// upload's answer comes after its body, so ct-client may replay the body
// (from its replay buffer) on another connection until then; /echo,
// whose answer streams while the body goes up, cannot be replayed once
// the app has part of it.
func (e *env) upload(ctx context.Context, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.upURL+"/sink", &pacedPattern{size: size, rate: cutUploadRate})
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set(AppHeader, "upload")
	resp, err := e.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upload: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("upload: answer: %w", err)
	}
	if got := strings.TrimSpace(string(b)); got != fmt.Sprint(size) {
		return fmt.Errorf("upload: the app-server got %s of %d bytes intact", got, size)
	}
	return nil
}

// serveSink reads an upload whole and answers how many bytes of origin's
// pattern it held, or 400 at the first wrong byte.
func serveSink(w http.ResponseWriter, r *http.Request) {
	n, err := checkPattern(r.Body)
	if err != nil {
		http.Error(w, fmt.Sprintf("after %d bytes: %v", n, err), http.StatusBadRequest)
		return
	}
	fmt.Fprintln(w, n)
}

// pacedPattern reads origin's pattern, size bytes, at rate bytes a second.
type pacedPattern struct {
	size, off int64
	rate      int64
	start     time.Time
}

func (p *pacedPattern) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	if due := p.start.Add(time.Duration(float64(p.off) / float64(p.rate) * float64(time.Second))); time.Until(due) > 0 {
		time.Sleep(time.Until(due))
	}
	n := int(min(int64(len(b)), p.size-p.off, 64<<10))
	for i := range n {
		b[i] = origin.PatternByte(p.off + int64(i))
	}
	p.off += int64(n)
	return n, nil
}

// cutTable is the outage rows as the matrix's second table.
func cutTable(rows []CutRow) results.Table {
	t := results.Table{Caption: "Outages on the matrix's paths.",
		Header: []string{"case", "intact", "total s", "back on the best path s after its return", "bound s (hold + 2 s)"}}
	for _, x := range rows {
		back, bound := "—", "—"
		if x.BoundS > 0 {
			back, bound = fmt.Sprintf("%.1f", x.BackS), fmt.Sprintf("%.0f", x.BoundS)
			if x.BackS < 0 {
				back = "never"
			}
		}
		t.Rows = append(t.Rows, []string{x.Case, x.Intact, fmt.Sprintf("%.1f", x.TotalS), back, bound})
	}
	t.Note = "The paths are dark from 1 s after the transfers start; the best path counts as back once it has delivered 256 kB after its return."
	return t
}
