package ride

import "time"

// Never is the arrival or decoding time of a frame that never arrives.
const Never = time.Duration(1<<63 - 1)

// The functions below work on one tile's GoP G_z in display order: h[x] is
// h_{x,z} and v[x] is v_{x,z} for the GoP's frames, index 0 being its I
// frame (Eq. 5.7 assumes a GoP starts with an I frame and ends before the
// next one).

// prevAnchor is i⁻ of §5.3.3: the closest earlier non-B frame, or -1.
func prevAnchor(h []FrameType, i int) int {
	for x := i - 1; x >= 0; x-- {
		if h[x] != B {
			return x
		}
	}
	return -1
}

// nextAnchor is i⁺ of §5.3.3: the closest later non-B frame in the GoP, or
// -1 when the GoP ends with B frames.
func nextAnchor(h []FrameType, i int) int {
	for x := i + 1; x < len(h); x++ {
		if h[x] != B {
			return x
		}
	}
	return -1
}

// DeadlineFrame is j of Eq. 5.8 (the FoV-aware Eq. 5.7): frame i's
// deadline Γ_i is the playback time of frame j of the same GoP.
//
//   - I frame: the last viewed frame of the GoP (every frame of the GoP
//     depends on it); i itself when none is viewed.
//   - P frame: nextP, the next P frame, when it is viewed; else the last
//     viewed B frame between i and nextP; else i. Without a later P frame
//     (Eq. 5.7's "no additional P frames following"), the last viewed frame
//     of the GoP, or i.
//   - B frame: i (a leaf of the dependency tree, Fig. 5.4).
//
// This follows the thesis's Fig. 5.5 reading exactly: P₁'s deadline falls
// back to its own playback when B₃, B₄ and P₂ are not viewed, even if a
// later viewed frame needs P₁ through P₂ (decoding, §5.3.3, still chains
// through P₂; the deadline, as published, does not).
func DeadlineFrame(h []FrameType, v []bool, i int) int {
	lastViewed := func(from, to int) int { // max{x ∈ [from, to) : v_x}, or -1
		for x := to - 1; x >= from; x-- {
			if v[x] {
				return x
			}
		}
		return -1
	}
	switch h[i] {
	case I:
		if j := lastViewed(i, len(h)); j >= 0 {
			return j
		}
		return i
	case P:
		nextP := -1
		for x := i + 1; x < len(h); x++ {
			if h[x] == P {
				nextP = x
				break
			}
		}
		if nextP < 0 {
			if j := lastViewed(i, len(h)); j >= 0 {
				return j
			}
			return i
		}
		if v[nextP] {
			return nextP
		}
		for x := nextP - 1; x > i; x-- {
			if h[x] == B && v[x] {
				return x
			}
		}
		return i
	default:
		return i
	}
}

// Deps returns the frames frame i decodes from directly (§5.3.3): none for
// I, i⁻ for P, i⁻ and i⁺ (when the GoP has one) for B.
func Deps(h []FrameType, i int) []int {
	switch h[i] {
	case P:
		if p := prevAnchor(h, i); p >= 0 {
			return []int{p}
		}
	case B:
		var d []int
		if p := prevAnchor(h, i); p >= 0 {
			d = append(d, p)
		}
		if n := nextAnchor(h, i); n >= 0 {
			d = append(d, n)
		}
		return d
	}
	return nil
}

// Closure returns frame i and every frame it needs to decode, directly or
// through other frames (the "frame and its dependencies" of §5.4.2), in
// ascending order.
func Closure(h []FrameType, i int) []int {
	in := make([]bool, len(h))
	var visit func(x int)
	visit = func(x int) {
		if in[x] {
			return
		}
		in[x] = true
		for _, d := range Deps(h, x) {
			visit(d)
		}
	}
	visit(i)
	var out []int
	for x, ok := range in {
		if ok {
			out = append(out, x)
		}
	}
	return out
}

// DecodeTimes returns d_x for every frame of the GoP given the arrival
// times a (§5.3.3): d = a for I, max{a, d_{i⁻}} for P, max{a, d_{i⁻},
// d_{i⁺}} for B. A frame that never arrives, or depends on one, has d =
// Never.
func DecodeTimes(h []FrameType, a []time.Duration) []time.Duration {
	d := make([]time.Duration, len(h))
	prev := -1         // the last anchor so far: i⁻ of the frames after it
	for x := range h { // anchors first, in order: each needs only earlier anchors
		if h[x] == B {
			continue
		}
		d[x] = a[x]
		if h[x] == P && prev >= 0 {
			d[x] = max(d[x], d[prev])
		}
		prev = x
	}
	// Then each B frame from its two anchors (Deps), found in one pass:
	// environments call this for every pending decision, so it allocates
	// nothing but d.
	prev, next := -1, -1
	for x := range h {
		if h[x] != B {
			prev = x
			continue
		}
		if next < x {
			if next = nextAnchor(h, x); next < 0 {
				next = len(h) // none: the GoP ends with B frames
			}
		}
		d[x] = a[x]
		if prev >= 0 {
			d[x] = max(d[x], d[prev])
		}
		if next < len(h) {
			d[x] = max(d[x], d[next])
		}
	}
	return d
}

// Playback gives the playback slot of frame i: it starts at t₁ = Start +
// i·FrameDur and ends at t₂ = t₁ + FrameDur (Fig. 5.6).
type Playback struct{ Start time.Duration }

// T1 is the start of frame i's playback slot, t₁(f_i).
func (p Playback) T1(i int) time.Duration { return p.Start + time.Duration(i)*FrameDur }

// T2 is the end of frame i's playback slot, t₂(f_i).
func (p Playback) T2(i int) time.Duration { return p.T1(i) + FrameDur }

// Deadline is Γ = t_playback(f_j) of Eq. 5.6 for global frame index j. We
// take a frame's playback time to be the end of its slot, t₂: a frame
// decoded by then still shows for part of its slot (Fig. 5.6(b)), so for
// a B frame Γ = t₂ and T_DH is 0 (Eq. 5.11), as a leaf helps no one.
func (p Playback) Deadline(j int) time.Duration { return p.T2(j) }
