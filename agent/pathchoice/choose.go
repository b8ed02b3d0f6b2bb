package pathchoice

import (
	"net/netip"
	"time"
)

// Path is one configured path as the client observed it at the moment of
// a choice.
type Path struct {
	// View is what a scheduler sees; View.ID is the path's index in the
	// client's configuration.
	View PathView
	// Addr is the local address; the lanes of one interface share it and
	// likely share a failure.
	Addr netip.Addr
	// Up: the path has a QUIC connection and it is not closed.
	Up bool
	// Primary: the path's role is primary. While a primary path is usable,
	// backup and metered paths get no requests.
	Primary bool
	// SuspectUntil: the path is suspected (of a stall, or just back after a
	// loss) until then; the zero time when it never was.
	SuspectUntil time.Time
}

// usable says p may carry a request now: up, not avoided, not suspected.
func (p Path) usable(avoid map[int]bool, now time.Time) bool {
	return p.Up && !avoid[p.View.ID] && !now.Before(p.SuspectUntil)
}

// Passes of Choose, each giving in on one more rule when the stricter ones
// leave no path: first a sibling lane of a tried path, then a suspected
// path, last a path the request tried already.
const (
	passStrict = iota
	passSameAddr
	passSuspected
	passTried
)

// Choose returns the ID of the path request r goes on, or -1 when no path
// is up (the caller waits for a change). paths are in ID order (paths[i]
// has View.ID i); avoid holds the paths r was tried on already.
//
// A request pinned to a path (r.Pin, a stripe worker) takes it when it is
// usable. Otherwise only primary paths are candidates while one of them is
// usable; among candidates, avoided paths, their sibling lanes (same local
// address) and suspected paths are left out while others remain, given in
// on in the reverse of that order. Once suspicion is given in on, only the
// candidates whose suspicion ends first are left (a path suspected of a
// stall for a moment before one held for FailbackHold after a loss). s
// picks among what is left; a pick outside it (a policy's bug) falls back
// to the first candidate.
func Choose(r Request, paths []Path, avoid map[int]bool, now time.Time, s Scheduler) int {
	if r.Pin > 0 && r.Pin <= len(paths) && paths[r.Pin-1].usable(avoid, now) {
		return paths[r.Pin-1].View.ID
	}
	primaryOK := PrimaryUp(paths, avoid, now)
	avoidAddr := map[netip.Addr]bool{}
	for id := range avoid {
		if id >= 0 && id < len(paths) {
			avoidAddr[paths[id].Addr] = true
		}
	}
	for pass := passStrict; pass <= passTried; pass++ {
		var views []PathView
		var first time.Time // the earliest end of suspicion among them
		for _, p := range paths {
			if !candidate(p, pass, primaryOK, avoid[p.View.ID], avoidAddr[p.Addr], now) {
				continue
			}
			until := later(p.SuspectUntil, now)
			if len(views) > 0 && until.After(first) {
				continue
			}
			if len(views) > 0 && until.Before(first) {
				views = views[:0]
			}
			views, first = append(views, p.View), until
		}
		if len(views) == 0 {
			continue
		}
		id := s.Pick(r, views)
		for _, v := range views {
			if v.ID == id {
				return id
			}
		}
		return views[0].ID
	}
	return -1
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// PrimaryUp says a primary path is usable at now (up, not in avoid, not
// suspected): backup and metered paths then get no requests.
func PrimaryUp(paths []Path, avoid map[int]bool, now time.Time) bool {
	for _, p := range paths {
		if p.Primary && p.usable(avoid, now) {
			return true
		}
	}
	return false
}

// candidate says p may take the request in pass: the rules that pass has
// not given in on yet hold.
func candidate(p Path, pass int, primaryOK, avoided, sameAddr bool, now time.Time) bool {
	switch {
	case !p.Up, primaryOK && !p.Primary:
		return false
	case avoided && pass < passTried:
		return false
	case now.Before(p.SuspectUntil) && pass < passSuspected:
		return false
	case sameAddr && pass < passSameAddr:
		return false
	}
	return true
}
