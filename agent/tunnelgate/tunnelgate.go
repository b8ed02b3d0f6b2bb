// Package tunnelgate is ct-client's side of ct-server's per-client tunnel
// limit: a device may hold a number of tunnels at ct-server (announced in
// the hello), and every CONNECT (or SOCKS5 CONNECT) first takes one of
// them here, so that the apps of the device queue in ct-client instead of
// meeting ct-server's 429s.
//
// The slots are shared fairly between apps (the client's AppRule: by
// default the target host, so by site for a browser): a freed slot goes to
// the waiting app that holds the fewest (max-min fairness), and only when
// every slot is taken does an app's request reclaim an idle tunnel — no
// byte either way for the idle time, and its server spoke last (a tunnel
// whose app awaits an answer is busy however slow the answer) — of the app
// holding the most (its own
// included, as a browser's socket pool closes an idle socket to open a new
// one), the one idle longest first. A reclaimed tunnel is closed with a
// FIN, as a server closes an idle keep-alive connection. So one app
// holding idle tunnels never locks out another, idle tunnels live as long
// as the slots allow, and an app meets a 429 only when it holds its share
// (capacity / apps holding or waiting) of busy tunnels and none of them
// has ended within the share wait, or (503) when no slot has been handed to
// anyone for MaxWait: an app whose queue moves keeps waiting.
//
// A tunnel's idle clock starts when it is attached to its app (Attach),
// never at the grant: between the two, ct-client may wait out ct-server's
// refusals for many seconds, and a tunnel that looked idle the moment it
// was handed over was once reclaimed right after its 200 (the app saw a
// 200 and then EOF).
package tunnelgate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the gate.
const (
	// DefaultIdle is how quiet a tunnel must be before it may be
	// reclaimed for a waiting app (only when every slot is taken).
	DefaultIdle = 5 * time.Second
	// ShareWait is how long an app holding its share of busy tunnels
	// waits for one of them to end before a 429.
	ShareWait = 10 * time.Second
	// MaxWait is how long an app below its share waits, while no slot
	// is handed to anyone, before a 503.
	MaxWait = 60 * time.Second
	// DefaultSlots is the gate's size until a hello announces ct-server's
	// limit (a ct-server that announces none has the default).
	DefaultSlots = 32
)

// ErrShareExhausted: the app holds its share of busy tunnels (429).
// ErrTimeout: no slot freed for an app below its share (503).
var (
	ErrShareExhausted = errors.New("this app holds its share of CONNECT tunnels")
	ErrTimeout        = errors.New("no CONNECT tunnel slot freed in time")
)

// Gate hands out tunnel slots.
type Gate struct {
	idleAfter time.Duration
	// ShareWait and MaxWait are the package's defaults; a test may
	// shorten them before first use.
	ShareWait, MaxWait time.Duration
	// OnReclaim, if set before first use, hears of each idle tunnel
	// reclaimed: its app and how long it had been idle (for a log line).
	OnReclaim func(app string, idle time.Duration)
	now       func() time.Time
	reclaimed atomic.Int64

	mu       sync.Mutex
	capacity int
	held     map[string]map[*Ticket]struct{}
	waiting  []*waiter
	pending  int                  // tunnels reclaimed whose slot is not back yet
	granted  map[string]time.Time // when each app last got a slot
	moved    time.Time            // when any app last got a slot
}

// Ticket is one held slot: its app, when its tunnel last moved a byte
// (unix nanoseconds; 0 until attached), and how to close it to reclaim it.
type Ticket struct {
	app       string
	active    atomic.Int64
	awaiting  atomic.Bool // the app spoke last: its server owes an answer
	reclaim   func()      // guarded by Gate.mu
	reclaimed atomic.Bool
	released  atomic.Bool
}

// Touch records that the ticket's tunnel carried a byte to its app at
// now. It does not start the idle clock of a ticket not yet attached.
func (t *Ticket) Touch(now time.Time) {
	t.awaiting.Store(false)
	if t.active.Load() != 0 {
		t.active.Store(now.UnixNano())
	}
}

// Sent records that the app sent bytes on the ticket's tunnel at now.
// Until a byte comes back (Touch) the tunnel waits on its server — a
// request or a handshake in flight, however long the server or a loaded
// machine takes — and is never reclaimed: a quiet tunnel is idle only
// when its server spoke last, as a keep-alive connection after a response.
func (t *Ticket) Sent(now time.Time) {
	t.awaiting.Store(true)
	if t.active.Load() != 0 {
		t.active.Store(now.UnixNano())
	}
}

type waiter struct {
	app   string
	ready chan *Ticket // receives the granted ticket
}

// New returns a gate of capacity slots whose tunnels may be reclaimed
// after idleAfter without a byte; now is its clock (nil: time.Now).
func New(capacity int, idleAfter time.Duration, now func() time.Time) *Gate {
	if now == nil {
		now = time.Now
	}
	return &Gate{capacity: capacity, idleAfter: idleAfter, ShareWait: ShareWait, MaxWait: MaxWait, now: now,
		held: map[string]map[*Ticket]struct{}{}, granted: map[string]time.Time{}}
}

// Reclaimed is how many idle tunnels the gate has reclaimed.
func (g *Gate) Reclaimed() int64 { return g.reclaimed.Load() }

// Capacity is the number of slots now.
func (g *Gate) Capacity() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.capacity
}

// SetCapacity follows ct-server's announced limit; slots held beyond a
// lowered one are given back as their tunnels end.
func (g *Gate) SetCapacity(n int) {
	g.mu.Lock()
	g.capacity = n
	grants := g.grantLocked()
	g.mu.Unlock()
	deliver(grants)
}

func (g *Gate) total() int {
	n := 0
	for _, ts := range g.held {
		n += len(ts)
	}
	return n
}

// share is what each app may hold when all slots are wanted: capacity over
// the apps holding or waiting (at least 1).
func (g *Gate) share() int {
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

func (g *Gate) takeLocked(app string, now time.Time) *Ticket {
	t := &Ticket{app: app}
	if g.held[app] == nil {
		g.held[app] = map[*Ticket]struct{}{}
	}
	g.held[app][t] = struct{}{}
	g.granted[app] = now
	g.moved = now
	return t
}

type grant struct {
	w *waiter
	t *Ticket
}

// grantLocked hands free slots to waiters: first to the app holding the
// fewest, in arrival order among equals.
func (g *Gate) grantLocked() []grant {
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
		out = append(out, grant{w, g.takeLocked(w.app, g.now())})
	}
	return out
}

func deliver(gs []grant) {
	for _, gr := range gs {
		gr.w.ready <- gr.t // buffered (1): never blocks
	}
}

// victimLocked picks an idle tunnel to reclaim for app: of the apps with
// an idle attached tunnel that hold at least as many slots as app does
// (reclaiming never makes shares less even), the one holding the most,
// and of its idle tunnels the one idle longest.
func (g *Gate) victimLocked(app string, now time.Time) *Ticket {
	var victim *Ticket
	most := -1
	for _, ts := range g.held {
		if len(ts) < len(g.held[app]) || len(ts) < most {
			continue
		}
		for t := range ts {
			last := t.active.Load()
			if t.reclaim == nil || t.reclaimed.Load() || t.awaiting.Load() || last == 0 || now.Sub(time.Unix(0, last)) < g.idleAfter {
				continue
			}
			if len(ts) > most || last < victim.active.Load() {
				victim, most = t, len(ts)
			}
		}
	}
	return victim
}

// Acquire waits for a slot for app. Its ticket cannot be reclaimed until
// Attach.
func (g *Gate) Acquire(ctx context.Context, app string) (*Ticket, error) {
	g.mu.Lock()
	if g.total() < g.capacity && len(g.waiting) == 0 {
		t := g.takeLocked(app, g.now())
		g.mu.Unlock()
		return t, nil
	}
	w := &waiter{app: app, ready: make(chan *Ticket, 1)}
	g.waiting = append(g.waiting, w)
	started := g.now()
	g.mu.Unlock()
	poll := time.NewTicker(min(max(g.idleAfter/4, 50*time.Millisecond), 250*time.Millisecond))
	defer poll.Stop()
	for {
		reclaim, err := g.step(app, started)
		if reclaim != nil {
			reclaim() // closes its tunnel and releases the slot
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

// step is one look of a waiting app at the gate: an idle tunnel to
// reclaim for it (when every slot is taken and no reclaim is under way for
// each waiter), and whether it should give up.
func (g *Gate) step(app string, started time.Time) (reclaim func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.total() >= g.capacity && g.pending < len(g.waiting) {
		if victim := g.victimLocked(app, now); victim != nil {
			victim.reclaimed.Store(true)
			g.pending++
			g.reclaimed.Add(1)
			if g.OnReclaim != nil {
				g.OnReclaim(victim.app, now.Sub(time.Unix(0, victim.active.Load())))
			}
			reclaim = victim.reclaim
		}
	}
	// An app at its share whose queue moves (its tunnels end and it gets
	// slots) keeps waiting; only a stuck one is refused.
	progress := started
	if last := g.granted[app]; last.After(progress) {
		progress = last
	}
	// A waiter below its share gives up only when no slot has moved to
	// anyone for MaxWait: behind a long queue that moves (200 requests
	// over 32 slots on a loaded machine) it waits its turn.
	freed := started
	if g.moved.After(freed) {
		freed = g.moved
	}
	switch {
	case len(g.held[app]) >= g.share() && now.Sub(progress) >= g.ShareWait:
		err = ErrShareExhausted
	case now.Sub(freed) >= g.MaxWait:
		err = ErrTimeout
	}
	return reclaim, err
}

// leave removes a waiter that gives up; it returns a ticket granted to it
// in the meantime.
func (g *Gate) leave(w *waiter) *Ticket {
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

// Attach says t's tunnel is now the app's (its 200 or SOCKS reply sent)
// and how to close it when its slot is reclaimed; its idle clock starts
// here.
func (g *Gate) Attach(t *Ticket, reclaim func()) {
	g.mu.Lock()
	t.active.Store(g.now().UnixNano())
	t.reclaim = reclaim
	g.mu.Unlock()
}

func (g *Gate) wantsLocked(app string) bool {
	for _, w := range g.waiting {
		if w.app == app {
			return true
		}
	}
	return false
}

// Release gives t's slot back (once) and hands it to a waiter.
func (g *Gate) Release(t *Ticket) {
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
