package leo

import (
	"fmt"
	"time"

	"github.com/hetquic/hetquic/sim"
)

// Network is a Constellation compiled to simulator links (thesis Fig. 3.6:
// a client and a server talking through satellites, background TCP flows
// through the same satellites):
//
//	data: server → Terr → Sat[k mod 2].Down → Iface[i].Down → client
//	ACKs: client → Iface[i].Up → Sat[k mod 2].Up → Terr → server
//
// Satellites alternate between two link slots by the parity of k (at most
// two satellites are in use at once), so when both interfaces are on one
// satellite (state s3) their subflows queue at the same bottleneck, with
// that slot's background flows. A slot's rate is Eq. 3.3 for its
// satellite's distance and its delay the two space legs (Eq. 3.11 without
// D_terr, which is on Terr), both updated every StepMs. At a handover the
// interface's route moves to the new satellite's slot and its Iface link
// is down for HandoverMs (packets in flight on it are lost).
type Network struct {
	C     *Constellation
	Sat   [2]struct{ Down, Up *sim.Link }
	Iface [2]struct{ Down, Up *sim.Link }
	Terr  struct{ Down, Up *sim.Link }
	fwd   [2][]*sim.Link // the interfaces' routes; mutated at handovers
	rev   [2][]*sim.Link
	sim   *sim.Sim
	// Phase is the orbit time at simulation time 0 (RandomPhase).
	Phase time.Duration
}

// orbit is the constellation time at simulation time t.
func (n *Network) orbit(t time.Duration) time.Duration { return t + n.Phase }

// slotSat is the satellite currently on slot s: the one of parity s
// nearest to the host.
func (c *Constellation) slotSat(s int, t time.Duration) int {
	k := c.Satellite(0, t) // nearest overall
	if mod2(k) == s {
		return k
	}
	a, b := k-1, k+1
	xa, xb := c.AlongKm(a, t), c.AlongKm(b, t)
	if xa*xa <= xb*xb {
		return a
	}
	return b
}

func mod2(k int) int { return ((k % 2) + 2) % 2 }

// Build creates the links in s and schedules the geometry updates and
// handovers up to until. c must have passed Defaults and Validate.
func Build(s *sim.Sim, c *Constellation, until time.Duration) *Network {
	n := &Network{C: c, sim: s}
	if c.RandomPhase {
		period := c.SpacingKm / c.SpeedKmS
		n.Phase = time.Duration(s.Rand("leo-phase").Float64() * period * float64(time.Second))
	}
	for slot := range n.Sat {
		n.Sat[slot].Down = sim.NewLink(s, fmt.Sprintf("sat%d-down", slot), sim.LinkParams{QueuePkts: c.QueuePackets, Loss: c.Loss})
		n.Sat[slot].Up = sim.NewLink(s, fmt.Sprintf("sat%d-up", slot), sim.LinkParams{QueuePkts: c.QueuePackets})
	}
	for i := range n.Iface {
		n.Iface[i].Down = sim.NewLink(s, fmt.Sprintf("iface%d-down", i), sim.LinkParams{})
		n.Iface[i].Up = sim.NewLink(s, fmt.Sprintf("iface%d-up", i), sim.LinkParams{})
	}
	terr := sim.LinkParams{Delay: time.Duration(c.TerrestrialMs * float64(time.Millisecond))}
	n.Terr.Down = sim.NewLink(s, "terr-down", terr)
	n.Terr.Up = sim.NewLink(s, "terr-up", terr)
	for i := range n.fwd {
		slot := mod2(c.Satellite(i, n.orbit(0)))
		n.fwd[i] = []*sim.Link{n.Terr.Down, n.Sat[slot].Down, n.Iface[i].Down}
		n.rev[i] = []*sim.Link{n.Iface[i].Up, n.Sat[slot].Up, n.Terr.Up}
	}
	step := time.Duration(c.StepMs * float64(time.Millisecond))
	var update func()
	update = func() {
		now := n.orbit(s.Now())
		for slot := range n.Sat {
			k := c.slotSat(slot, now)
			d := c.DistanceM(k, now)
			rate := c.CapacityBps(d)
			delay := time.Duration(2 * d / SpeedOfLight * float64(time.Second))
			for _, l := range []*sim.Link{n.Sat[slot].Down, n.Sat[slot].Up} {
				p := l.Params()
				p.RateBps, p.Delay = rate, delay
				l.SetParams(p)
			}
		}
		if now+step <= until {
			s.After(step, update)
		}
	}
	s.At(0, update)
	out := time.Duration(c.HandoverMs * float64(time.Millisecond))
	for i := range n.fwd {
		for _, t := range c.Handovers(i, n.orbit(until)) {
			if t <= n.Phase {
				continue
			}
			s.At(t-n.Phase, func() {
				// The satellite just after t (t itself is rounded down).
				slot := mod2(c.Satellite(i, t+time.Millisecond))
				n.fwd[i][1], n.rev[i][1] = n.Sat[slot].Down, n.Sat[slot].Up
				if out > 0 {
					n.Iface[i].Down.SetDown(true)
					n.Iface[i].Up.SetDown(true)
					s.After(out, func() {
						n.Iface[i].Down.SetDown(false)
						n.Iface[i].Up.SetDown(false)
					})
				}
			})
		}
	}
	return n
}

// Paths returns the MPQUIC connection's two paths (data server → client),
// with MACO's cross-layer Access: the serving satellite's Eq. 3.3 capacity
// and Eq. 3.11 delay at now (0 capacity during a handover outage).
func (n *Network) Paths() []sim.PathSpec {
	var out []sim.PathSpec
	for i := range n.fwd {
		out = append(out, sim.PathSpec{Name: fmt.Sprintf("sat-if%d", i), Fwd: n.fwd[i], Rev: n.rev[i],
			Forecast: func(now, dt time.Duration) float64 {
				t := n.orbit(now + dt)
				return n.C.CapacityBps(n.C.DistanceM(n.C.Satellite(i, t), t))
			},
			Access: func(now time.Duration) (float64, time.Duration) {
				now = n.orbit(now)
				k := n.C.Satellite(i, now)
				c := n.C.CapacityBps(n.C.DistanceM(k, now))
				if n.Iface[i].Down.Down() {
					c = 0
				}
				return c, n.C.PropRTT(k, now)
			}})
	}
	return out
}

// AccessBDP is interface iface's path BDP at t in bytes: C·D with C the
// serving satellite's Eq. 3.3 capacity (as if the interface were up) and D
// Eq. 3.11's round-trip propagation delay; slot is the satellite link slot
// the interface uses then (interfaces on one slot share its bottleneck).
func (n *Network) AccessBDP(iface int, t time.Duration) (bytes float64, slot int) {
	o := n.orbit(t)
	k := n.C.Satellite(iface, o)
	return n.C.CapacityBps(n.C.DistanceM(k, o)) / 8 * n.C.PropRTT(k, o).Seconds(), mod2(k)
}

// BackgroundPath is the single path of background flow j on slot s: the
// same terrestrial link and satellite slot, its own (never down) ground
// terminal.
func (n *Network) BackgroundPath(slot int) sim.PathSpec {
	return sim.PathSpec{Name: fmt.Sprintf("bg-sat%d", slot),
		Fwd: []*sim.Link{n.Terr.Down, n.Sat[slot].Down},
		Rev: []*sim.Link{n.Sat[slot].Up, n.Terr.Up}}
}

// Links returns every link (for drop statistics).
func (n *Network) Links() []*sim.Link {
	var l []*sim.Link
	for i := range 2 {
		l = append(l, n.Sat[i].Down, n.Sat[i].Up, n.Iface[i].Down, n.Iface[i].Up)
	}
	return append(l, n.Terr.Down, n.Terr.Up)
}

// SharedSlot is the slot both interfaces use at t, or −1 in state s2.
func (n *Network) SharedSlot(t time.Duration) int {
	t = n.orbit(t)
	if !n.C.Shared(t) {
		return -1
	}
	return mod2(n.C.Satellite(0, t))
}
