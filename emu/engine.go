package emu

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hetquic/hetquic/internal/linkmodel"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultMaxPacket is the largest datagram the engine accepts by default
// (bytes of payload). Larger ones are dropped as malformed: a real path's MTU
// would not carry them either.
const DefaultMaxPacket = 1500

// Config configures an Engine.
type Config struct {
	// Scenario gives the paths, their initial parameters and the timed
	// events. Required.
	Scenario *scenario.Scenario
	// Sink receives released packets. Required.
	Sink Sink
	// Seed seeds every link's random source (each link has its own stream,
	// derived from Seed, the path index and the direction), so a run is
	// reproducible for a given seed and packet sequence.
	Seed uint64
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// Log, if set, gets every packet event.
	Log EventLog
	// MaxPacket is the largest payload accepted; 0 means DefaultMaxPacket.
	MaxPacket int
	// NoEvents skips the scenario's timed events (the experiment runner
	// applies them itself, by round, through Apply and Outage).
	NoEvents bool
}

// Engine emulates every path of a scenario, both directions. Its methods are
// safe for concurrent use.
type Engine struct {
	cfg   Config
	clock Clock
	start time.Time
	links [][2]*link
	pool  sync.Pool

	mu     sync.Mutex // guards paths and traces
	paths  []scenario.Path
	traces *linkmodel.TraceFiles

	evAlarm   Waiter
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// link is a linkCore with its locks and its releasing goroutine.
type link struct {
	path int
	dir  Dir
	mu   sync.Mutex // guards core
	core *linkCore
	// outMu serialises deliveries of this link (so packets leave in release
	// order) and guards out. Lock order: mu, then outMu.
	outMu sync.Mutex
	out   []*Packet
	alarm Waiter // the releasing goroutine sleeps on it
}

// New builds an engine and starts it: its clock starts now, its links
// release packets and its timed events run until Close.
func New(cfg Config) (*Engine, error) {
	if cfg.Scenario == nil {
		return nil, errors.New("emu: Config.Scenario is nil")
	}
	if cfg.Sink == nil {
		return nil, errors.New("emu: Config.Sink is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = DefaultMaxPacket
	}
	e := &Engine{
		cfg:    cfg,
		clock:  cfg.Clock,
		paths:  append([]scenario.Path(nil), cfg.Scenario.Paths...),
		traces: linkmodel.NewTraceFiles(cfg.Scenario.ReadFile),
		done:   make(chan struct{}),
	}
	bufSize := cfg.MaxPacket + 1
	e.pool.New = func() any { return &Packet{Data: make([]byte, 0, bufSize)} }
	e.links = make([][2]*link, len(e.paths))
	for i, p := range e.paths {
		for _, d := range []Dir{Up, Down} {
			rng := linkmodel.Rand(cfg.Seed, p.Name, d == Down)
			l := &link{path: i, dir: d, core: newLinkCore(p.Name, d, rng, cfg.MaxPacket, cfg.Log), alarm: e.clock.NewWaiter()}
			lc := p.Up
			if d == Down {
				lc = p.Down
			}
			if err := l.core.configure(lc, e.traces, 0); err != nil {
				return nil, fmt.Errorf("emu: paths[%d].%s: %w", i, d, err)
			}
			e.links[i][d] = l
		}
	}
	e.start = e.clock.Now()
	for _, ls := range e.links {
		for _, l := range ls {
			e.wg.Add(1)
			go e.run(l)
		}
	}
	if !cfg.NoEvents && len(cfg.Scenario.Events) > 0 {
		e.evAlarm = e.clock.NewWaiter()
		e.wg.Add(1)
		go e.runEvents()
	}
	return e, nil
}

// Close stops the engine: its goroutines end and held packets are
// discarded. Input after Close drops nothing and delivers nothing; it only
// recycles. Close is idempotent.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		close(e.done)
		for _, ls := range e.links {
			for _, l := range ls {
				l.alarm.Close()
			}
		}
		if e.evAlarm != nil {
			e.evAlarm.Close()
		}
	})
	e.wg.Wait()
}

// Now is the engine's time: since New.
func (e *Engine) Now() time.Duration { return e.clock.Now().Sub(e.start) }

// Paths returns the current parameters of every path (events and patches
// applied).
func (e *Engine) Paths() []scenario.Path {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]scenario.Path(nil), e.paths...)
}

// NewPacket returns an empty packet from the engine's pool.
func (e *Engine) NewPacket() *Packet {
	p := e.pool.Get().(*Packet)
	p.Data = p.Data[:0]
	return p
}

// Free returns a packet the front end will not pass to Input.
func (e *Engine) Free(p *Packet) {
	p.Tag = nil
	e.pool.Put(p)
}

// Input hands pkts to link (path, dir); the engine owns every packet from
// now (not the slice). Packets that need no wait are delivered to the Sink
// before Input returns, on the caller's goroutine.
func (e *Engine) Input(path int, dir Dir, pkts []*Packet) {
	l := e.links[path][dir]
	select {
	case <-e.done:
		for _, p := range pkts {
			e.Free(p)
		}
		return
	default:
	}
	now := e.Now()
	l.mu.Lock()
	oldTop, had := l.core.next()
	for _, p := range pkts {
		if l.core.input(p, now) != CauseNone {
			e.Free(p)
		}
	}
	top, has := l.core.next()
	if has && top <= now {
		e.release(l, now) // unlocks l.mu
		return
	}
	l.mu.Unlock()
	if has && (!had || top < oldTop) {
		l.alarm.Wake()
	}
}

// release delivers every packet of l due at now. Called with l.mu held; it
// unlocks it.
func (e *Engine) release(l *link, now time.Duration) {
	l.outMu.Lock()
	l.out = l.core.popDue(now, l.out[:0], e.Free)
	l.mu.Unlock()
	if len(l.out) > 0 {
		e.cfg.Sink.Deliver(l.path, l.dir, l.out)
		for i, p := range l.out {
			e.Free(p)
			l.out[i] = nil
		}
	}
	l.outMu.Unlock()
}

// run releases l's packets at their times until Close.
func (e *Engine) run(l *link) {
	defer e.wg.Done()
	defer func() { // discard what is left
		l.mu.Lock()
		for len(l.core.h) > 0 {
			e.Free(l.core.h.pop())
		}
		l.mu.Unlock()
	}()
	for {
		select {
		case <-e.done:
			return
		default:
		}
		l.mu.Lock()
		now := e.Now()
		top, has := l.core.next()
		if has && top <= now {
			e.release(l, now)
			continue
		}
		// Arm under the lock: an Input that adds an earlier packet after
		// this Wakes the alarm, and that Wake is not overwritten.
		if has {
			l.alarm.Set(e.start.Add(top))
		} else {
			l.alarm.Set(time.Time{})
		}
		l.mu.Unlock()
		if !l.alarm.Wait() {
			return
		}
	}
}

// runEvents applies the scenario's timed events at their times.
func (e *Engine) runEvents() {
	defer e.wg.Done()
	evs := append([]scenario.Event(nil), e.cfg.Scenario.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].AtS < evs[j].AtS })
	for _, ev := range evs {
		at := e.start.Add(time.Duration(ev.AtS * float64(time.Second)))
		for e.clock.Now().Before(at) {
			e.evAlarm.Set(at)
			if !e.evAlarm.Wait() {
				return
			}
		}
		// The scenario was validated, so these fail only on trace I/O
		// (checked at load too); nothing useful can be done with the error
		// here but keep running.
		if ev.Set != nil {
			_ = e.Apply(ev.Path, ev.Set)
		} else {
			_ = e.Outage(ev.Path, time.Duration(ev.OutageS*float64(time.Second)))
		}
	}
}

// Apply changes the named path's parameters with patch, from now on.
func (e *Engine) Apply(path string, patch *scenario.Patch) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := e.pathIndex(path)
	if i < 0 {
		return fmt.Errorf("path %q: no such path", path)
	}
	np, err := patch.Apply(e.paths[i])
	if err != nil {
		return err
	}
	// Resolve traces before touching the links, so a bad patch changes
	// nothing.
	for _, lc := range []scenario.Link{np.Up, np.Down} {
		if lc.RateTrace != "" {
			if _, err := e.traces.RateTrace(lc.RateTrace); err != nil {
				return err
			}
		}
		if lc.LossTrace != "" {
			if _, err := e.traces.LossTrace(lc.LossTrace); err != nil {
				return err
			}
		}
	}
	now := e.Now()
	for d, lc := range []scenario.Link{np.Up, np.Down} {
		l := e.links[i][d]
		l.mu.Lock()
		err := l.core.configure(lc, e.traces, now)
		l.mu.Unlock()
		if err != nil {
			return err
		}
	}
	e.paths[i] = np
	return nil
}

// Outage takes the named path down, both directions, for d from now.
func (e *Engine) Outage(path string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("outage: duration %v must be positive", d)
	}
	e.mu.Lock()
	i := e.pathIndex(path)
	e.mu.Unlock()
	if i < 0 {
		return fmt.Errorf("path %q: no such path", path)
	}
	now := e.Now()
	for _, l := range e.links[i] {
		l.mu.Lock()
		l.core.outage(now, d)
		l.mu.Unlock()
	}
	return nil
}

// Stats returns the counters of every path.
func (e *Engine) Stats() []PathStats {
	now := e.Now()
	out := make([]PathStats, len(e.links))
	for i, ls := range e.links {
		out[i].Name = e.cfg.Scenario.Paths[i].Name
		for d, l := range ls {
			l.mu.Lock()
			s := l.core.stats(now)
			l.mu.Unlock()
			if Dir(d) == Up {
				out[i].Up = s
			} else {
				out[i].Down = s
			}
		}
	}
	return out
}

// PathIndex returns the index of the named path, or -1.
func (e *Engine) PathIndex(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pathIndex(name)
}

func (e *Engine) pathIndex(name string) int {
	for i, p := range e.paths {
		if p.Name == name {
			return i
		}
	}
	return -1
}
