package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// tunnelGate is ct-client's side of ct-server's per-client tunnel limit:
// a device may hold capacity tunnels at ct-server (it announces them in
// the hello, Ct-Max-Tunnels), and every CONNECT (or SOCKS5 CONNECT) first
// takes one of them here, so that the apps of the device queue in
// ct-client instead of meeting ct-server's 429s.
//
// The slots are shared fairly between apps (the client's AppRule: by
// default the target host, so by site for a browser): a freed slot goes
// to the waiting app that holds the fewest (max-min fairness), and when
// every slot is taken, an app's request reclaims an idle tunnel (no byte
// either way for idleAfter) of the app holding the most — its own
// included, as a browser's socket pool closes an idle socket to open a
// new one. A reclaimed tunnel is closed with a FIN, as a server closes an
// idle keep-alive connection; HTTP clients retry on a fresh one. So one
// app holding idle tunnels never locks out another, and an app meets a
// 429 only when it holds its share (capacity / apps holding or waiting)
// of busy tunnels and none of them has ended (giving it a slot again)
// within shareWait: an app whose queue moves keeps waiting.
type tunnelGate struct {
	idleAfter time.Duration // a tunnel this quiet may be reclaimed
	shareWait time.Duration // an app at its share waits this long, then 429
	maxWait   time.Duration // an app below its share waits this long, then 503

	mu       sync.Mutex
	capacity int
	held     map[string]map[*gateTicket]struct{}
	waiting  []*gateWaiter
	pending  int                  // tunnels reclaimed whose slot is not back yet
	granted  map[string]time.Time // when each app last got a slot
}

// gateTicket is one held slot: its app, when its tunnel last moved a
// byte (unix nanoseconds), and how to close the tunnel to reclaim it.
type gateTicket struct {
	app       string
	active    atomic.Int64
	reclaim   func() // guarded by tunnelGate.mu
	reclaimed atomic.Bool
	released  atomic.Bool
}

func (t *gateTicket) touch(now time.Time) { t.active.Store(now.UnixNano()) }

type gateWaiter struct {
	app   string
	ready chan *gateTicket // receives the granted ticket
}

// errShareExhausted: the app holds its share of busy tunnels (429).
// errGateTimeout: no slot freed for an app below its share (503).
var (
	errShareExhausted = errors.New("this app holds its share of CONNECT tunnels")
	errGateTimeout    = errors.New("no CONNECT tunnel slot freed in time")
)

// Defaults of the gate; see tunnelGate.
const (
	DefaultTunnelIdle = 5 * time.Second
	tunnelShareWait   = 10 * time.Second
	tunnelMaxWait     = 60 * time.Second
	// defaultTunnelSlots is the gate's size until a hello announces
	// ct-server's limit (a ct-server that announces none has the default).
	defaultTunnelSlots = 32
)

func newTunnelGate(capacity int, idleAfter time.Duration) *tunnelGate {
	return &tunnelGate{capacity: capacity, idleAfter: idleAfter, shareWait: tunnelShareWait,
		maxWait: tunnelMaxWait, held: map[string]map[*gateTicket]struct{}{}, granted: map[string]time.Time{}}
}

// setCapacity follows ct-server's announced limit; slots held beyond a
// lowered one are given back as their tunnels end.
func (g *tunnelGate) setCapacity(n int) {
	g.mu.Lock()
	g.capacity = n
	grants := g.grantLocked()
	g.mu.Unlock()
	deliver(grants)
}

func (g *tunnelGate) total() int {
	n := 0
	for _, ts := range g.held {
		n += len(ts)
	}
	return n
}

// share is what each app may hold when all slots are wanted: capacity over
// the apps holding or waiting (at least 1).
func (g *tunnelGate) share() int {
	apps := map[string]bool{}
	for a, ts := range g.held {
		if len(ts) > 0 {
			apps[a] = true
		}
	}
	for _, w := range g.waiting {
		apps[w.app] = true
	}
	return max(1, g.capacity/max(1, len(apps)))
}

func (g *tunnelGate) takeLocked(app string, now time.Time) *gateTicket {
	t := &gateTicket{app: app}
	t.touch(now)
	if g.held[app] == nil {
		g.held[app] = map[*gateTicket]struct{}{}
	}
	g.held[app][t] = struct{}{}
	g.granted[app] = now
	return t
}

type grant struct {
	w *gateWaiter
	t *gateTicket
}

// grantLocked hands free slots to waiters: first to the app holding the
// fewest, in arrival order among equals.
func (g *tunnelGate) grantLocked() []grant {
	var out []grant
	for len(g.waiting) > 0 && g.total() < g.capacity {
		best := 0
		for i, w := range g.waiting {
			if len(g.held[w.app]) < len(g.held[g.waiting[best].app]) {
				best = i
			}
		}
		w := g.waiting[best]
		g.waiting = append(g.waiting[:best], g.waiting[best+1:]...)
		out = append(out, grant{w, g.takeLocked(w.app, time.Now())})
	}
	return out
}

func deliver(gs []grant) {
	for _, gr := range gs {
		gr.w.ready <- gr.t // buffered (1): never blocks
	}
}

// victimLocked picks an idle tunnel to reclaim for app: from the app
// holding the most slots among those with an idle one, if it holds at
// least as many as app does (reclaiming never makes shares less even).
func (g *tunnelGate) victimLocked(app string, now time.Time) *gateTicket {
	var victim *gateTicket
	most := -1
	for _, ts := range g.held {
		if len(ts) < len(g.held[app]) || len(ts) <= most {
			continue
		}
		for t := range ts {
			if t.reclaim != nil && !t.reclaimed.Load() && now.Sub(time.Unix(0, t.active.Load())) >= g.idleAfter {
				victim, most = t, len(ts)
				break
			}
		}
	}
	return victim
}

// acquire waits for a slot for app. Its ticket cannot be reclaimed until
// setReclaim says how to close its tunnel.
func (g *tunnelGate) acquire(ctx context.Context, app string) (*gateTicket, error) {
	g.mu.Lock()
	if g.total() < g.capacity && len(g.waiting) == 0 {
		t := g.takeLocked(app, time.Now())
		g.mu.Unlock()
		return t, nil
	}
	w := &gateWaiter{app: app, ready: make(chan *gateTicket, 1)}
	g.waiting = append(g.waiting, w)
	started := time.Now()
	g.mu.Unlock()
	poll := time.NewTicker(min(max(g.idleAfter/4, 50*time.Millisecond), 250*time.Millisecond))
	defer poll.Stop()
	for {
		g.mu.Lock()
		var reclaim func()
		if g.total() >= g.capacity && g.pending < len(g.waiting) {
			if victim := g.victimLocked(app, time.Now()); victim != nil {
				victim.reclaimed.Store(true)
				g.pending++
				reclaim = victim.reclaim
			}
		}
		atShare := len(g.held[app]) >= g.share()
		// An app at its share whose queue moves (its tunnels end and it
		// gets slots) keeps waiting; only a stuck one is refused.
		progress := started
		if last := g.granted[app]; last.After(progress) {
			progress = last
		}
		g.mu.Unlock()
		if reclaim != nil {
			reclaim() // closes its tunnel and releases the slot
		}
		var err error
		switch {
		case atShare && time.Since(progress) >= g.shareWait:
			err = errShareExhausted
		case time.Since(started) >= g.maxWait:
			err = errGateTimeout
		}
		if err == nil {
			select {
			case t := <-w.ready:
				return t, nil
			case <-ctx.Done():
				err = ctx.Err()
			case <-poll.C:
				continue
			}
		}
		if t := g.leave(w); t != nil { // granted meanwhile: take it after all
			return t, nil
		}
		return nil, err
	}
}

// leave removes a waiter that gives up; it returns a ticket granted to it
// in the meantime.
func (g *tunnelGate) leave(w *gateWaiter) *gateTicket {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.waiting {
		if o == w {
			g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
			return nil
		}
	}
	return <-w.ready // not waiting any more: a grant is in its channel
}

// setReclaim says how to close t's tunnel when its slot is reclaimed.
func (g *tunnelGate) setReclaim(t *gateTicket, reclaim func()) {
	g.mu.Lock()
	t.reclaim = reclaim
	g.mu.Unlock()
}

func (g *tunnelGate) wantsLocked(app string) bool {
	for _, w := range g.waiting {
		if w.app == app {
			return true
		}
	}
	return false
}

// release gives t's slot back (once) and hands it to a waiter.
func (g *tunnelGate) release(t *gateTicket) {
	if t.released.Swap(true) {
		return
	}
	g.mu.Lock()
	if t.reclaimed.Load() {
		g.pending--
	}
	delete(g.held[t.app], t)
	if len(g.held[t.app]) == 0 {
		delete(g.held, t.app)
		if !g.wantsLocked(t.app) {
			delete(g.granted, t.app) // the table stays as small as the apps using it
		}
	}
	grants := g.grantLocked()
	g.mu.Unlock()
	deliver(grants)
}
