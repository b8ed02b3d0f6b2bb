package emu

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/internal/leakcheck"
	"github.com/hetquic/hetquic/scenario"
)

func parseScenario(t testing.TB, text string, files ...string) *scenario.Scenario {
	t.Helper()
	fsys := fstest.MapFS{"s.yaml": {Data: []byte(text)}}
	for i := 0; i+1 < len(files); i += 2 {
		fsys[files[i]] = &fstest.MapFile{Data: []byte(files[i+1])}
	}
	s, err := scenario.Load(fsys, "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder is a Sink that notes when each packet arrives.
type recorder struct {
	mu    sync.Mutex
	clock Clock
	got   []delivery
}

type delivery struct {
	path int
	dir  Dir
	at   time.Time
	sent time.Time
	size int
}

func (r *recorder) Deliver(path int, dir Dir, pkts []*Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pkts {
		r.got = append(r.got, delivery{path, dir, r.clock.Now(), p.Sent, len(p.Data)})
	}
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func send(e *Engine, path int, dir Dir, size int) {
	p := e.NewPacket()
	p.Data = p.Data[:size]
	p.Sent = time.Now()
	e.Input(path, dir, []*Packet{p})
}

const twoPaths = `
name: t
paths:
  - name: a
    up: {delay_ms: 10}
    down: {delay_ms: 20}
  - name: b
    up: {}
    down: {}
events:
  - {at_s: 1, path: a, set: {up: {delay_ms: 50}}}
  - {at_s: 2, path: b, outage_s: 1}
`

func TestEngineEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{clock: GoClock{}}
		e, err := New(Config{Scenario: parseScenario(t, twoPaths), Sink: rec, Clock: GoClock{}, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		start := time.Now()
		send(e, 0, Up, 100)   // 10 ms
		send(e, 0, Down, 100) // 20 ms
		send(e, 1, Up, 100)   // at once
		time.Sleep(1500 * time.Millisecond)
		send(e, 0, Up, 100) // after the event: 50 ms
		time.Sleep(1 * time.Second)
		send(e, 1, Down, 100) // in the outage (2 s .. 3 s): dropped
		time.Sleep(1 * time.Second)
		send(e, 1, Down, 100) // after it
		time.Sleep(time.Second)
		synctest.Wait()

		got := rec.deliveries()
		want := []struct {
			path  int
			dir   Dir
			delay time.Duration
		}{{1, Up, 0}, {0, Up, 10 * time.Millisecond}, {0, Down, 20 * time.Millisecond}, {0, Up, 50 * time.Millisecond}, {1, Down, 0}}
		if len(got) != len(want) {
			t.Fatalf("%d deliveries, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			g := got[i]
			if g.path != w.path || g.dir != w.dir || g.at.Sub(g.sent) != w.delay {
				t.Errorf("delivery %d: path %d %v after %v, want path %d %v after %v", i, g.path, g.dir, g.at.Sub(g.sent), w.path, w.dir, w.delay)
			}
		}
		st := e.Stats()
		if st[1].Down.Dropped[CauseOutage] != 1 {
			t.Errorf("outage drops %d, want 1", st[1].Down.Dropped[CauseOutage])
		}
		if p := e.Paths()[0]; p.Up.DelayMs != 50 {
			t.Errorf("path a up delay %v after the event, want 50", p.Up.DelayMs)
		}
		_ = start
	})
}

func TestEngineOrderUnderJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{clock: GoClock{}}
		s := parseScenario(t, "name: j\npaths:\n  - name: a\n    up: {delay_ms: 5, jitter_ms: 3}\n")
		e, err := New(Config{Scenario: s, Sink: rec, Clock: GoClock{}, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for i := range 1000 {
			send(e, 0, Up, 10+i%1000)
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := rec.deliveries()
		if len(got) != 1000 {
			t.Fatalf("%d delivered, want 1000", len(got))
		}
		for i, d := range got {
			if d.size != 10+i%1000 {
				t.Fatalf("packet %d delivered out of order", i)
			}
			if d.at.Sub(d.sent) < 5*time.Millisecond {
				t.Fatalf("packet %d delayed %v, below the 5 ms base", i, d.at.Sub(d.sent))
			}
		}
	})
}

func TestControlAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{clock: GoClock{}}
		e, err := New(Config{Scenario: parseScenario(t, twoPaths), Sink: rec, Clock: GoClock{}, NoEvents: true})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		// In-memory transport: real sockets would stop synctest's clock.
		c := &ControlClient{Addr: "emu", hc: &http.Client{Transport: handlerTransport{ControlHandler(e, nil)}}}
		ctx := context.Background()

		if err := c.Apply(ctx, "a", "{down: {delay_ms: 60}, both: {loss: 0.5}}"); err != nil {
			t.Fatal(err)
		}
		p := e.Paths()[0]
		if p.Down.DelayMs != 60 || p.Up.DelayMs != 10 || p.Up.Loss != 0.5 || p.Down.Loss != 0.5 {
			t.Errorf("after patch: %+v", p)
		}
		for _, bad := range []struct{ path, patch, want string }{
			{"a", "{down: {delay_ms: -1}}", "delay_ms"},
			{"a", "{sideways: {delay_ms: 1}}", "sideways"},
			{"a", "{down: {colour: red}}", "colour"},
			{"zz", "{down: {delay_ms: 1}}", "no such path"},
		} {
			err := c.Apply(ctx, bad.path, bad.patch)
			if err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("Apply(%q, %q) = %v, want an error about %q", bad.path, bad.patch, err, bad.want)
			}
		}
		if p := e.Paths()[0]; p.Down.DelayMs != 60 {
			t.Errorf("a failed patch changed the path: %+v", p)
		}

		if err := c.Outage(ctx, "b", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		send(e, 1, Up, 100)
		st, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Paths[1].Up; got.Dropped[CauseOutage] != 1 || got.PacketsIn != 1 || !got.Outage {
			t.Errorf("stats after outage: %+v", got)
		}
		time.Sleep(3 * time.Second)
		send(e, 1, Up, 100)
		st, _ = c.Stats(ctx)
		if got := st.Paths[1].Up; got.PacketsOut != 1 || got.Outage {
			t.Errorf("stats after the outage ended: %+v", got)
		}
	})
}

func TestEngineNoAllocs(t *testing.T) {
	s := parseScenario(t, "name: n\npaths:\n  - name: a\n")
	e, err := New(Config{Scenario: s, Sink: SinkFunc(func(int, Dir, []*Packet) {})})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	batch := make([]*Packet, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		p := e.NewPacket()
		p.Data = p.Data[:1200]
		batch[0] = p
		e.Input(0, Up, batch)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
}

func TestCSVLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b strings.Builder
		log := NewCSVLog(&b)
		s := parseScenario(t, "name: n\npaths:\n  - name: a\n    up: {delay_ms: 3, loss_trace: l.txt}\n", "l.txt", "0\n1\n")
		e, err := New(Config{Scenario: s, Sink: SinkFunc(func(int, Dir, []*Packet) {}), Clock: GoClock{}, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		send(e, 0, Up, 100)
		send(e, 0, Up, 100)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		e.Close()
		if err := log.Flush(); err != nil {
			t.Fatal(err)
		}
		want := CSVHeader +
			"0.000,a,up,in,,100,,\n" +
			"0.000,a,up,in,,100,,\n" +
			"0.000,a,up,drop,loss,100,,\n" +
			"3.000,a,up,out,,100,0.000,3.000\n"
		if b.String() != want {
			t.Errorf("log:\n%s\nwant:\n%s", b.String(), want)
		}
	})
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestControlUnixSocket runs the control API over a real unix socket, as
// "hetquic emu relay --control unix:PATH" does.
func TestControlUnixSocket(t *testing.T) {
	e, err := New(Config{Scenario: parseScenario(t, twoPaths), Sink: SinkFunc(func(int, Dir, []*Packet) {}), NoEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	addr := "unix:" + t.TempDir() + "/ctl.sock"
	ln, err := ListenControl(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- ServeControl(ctx, ln, ControlHandler(e, func() any { return map[string]int{"x": 1} }))
	}()
	c := &ControlClient{Addr: addr}
	if err := c.Apply(ctx, "b", "{up: {delay_ms: 7}}"); err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Paths) != 2 || string(st.FrontEnd) != `{"x":1}` {
		t.Errorf("stats: %+v", st)
	}
	if e.Paths()[1].Up.DelayMs != 7 {
		t.Error("patch over the unix socket did not apply")
	}
	if _, err := ListenControl("192.0.2.1:7000"); err == nil {
		t.Error("a non-loopback control address was accepted")
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeControl: %v", err)
	}
}

// TestEngineCloseWithHeldPackets checks that Close ends every goroutine even
// with packets waiting in the links.
func TestEngineCloseWithHeldPackets(t *testing.T) {
	before := runtime.NumGoroutine()
	s := parseScenario(t, "name: c\npaths:\n  - name: a\n    up: {delay_ms: 10000}\n  - name: b\n    down: {rate_mbps: 0.001}\nevents:\n  - {at_s: 100, path: a, outage_s: 1}\n")
	e, err := New(Config{Scenario: s, Sink: SinkFunc(func(int, Dir, []*Packet) {})})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		send(e, 0, Up, 100)
		send(e, 1, Down, 100)
	}
	e.Close()
	e.Close()
	send(e, 0, Up, 100) // after Close: recycled, no panic
	if n, _ := leakcheck.Wait(before, time.Second); n > before {
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}
}
