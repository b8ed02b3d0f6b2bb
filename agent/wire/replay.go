package wire

// ReplayBuf keeps the last ReplayBytes bytes of a tunnel direction. It
// grows as it fills and never beyond ReplayBytes (append's growth would
// take it to about 1.25× that), so a tunnel costs at most ReplayBytes here.
type ReplayBuf struct{ b []byte }

// Bytes is what the buffer holds, oldest first; it ends at the last byte
// added.
func (r *ReplayBuf) Bytes() []byte { return r.b }

// Cap is the memory the buffer holds now.
func (r *ReplayBuf) Cap() int { return cap(r.b) }

// Free lets the buffer's memory go.
func (r *ReplayBuf) Free() { r.b = nil }

// Growth is how many bytes Add of n bytes adds to the buffer's memory.
func (r *ReplayBuf) Growth(n int) int {
	n = min(n, ReplayBytes)
	keep := min(len(r.b), ReplayBytes-n)
	if need := keep + n; need > cap(r.b) {
		return min(max(2*cap(r.b), need, 64<<10), ReplayBytes) - cap(r.b)
	}
	return 0
}

// AddKeep appends p without growing the buffer's memory: the oldest
// bytes go to make room (a resume from before them is refused, never
// served wrong).
func (r *ReplayBuf) AddKeep(p []byte) {
	c := cap(r.b)
	if len(p) >= c {
		r.b = append(r.b[:0], p[len(p)-c:]...)
		return
	}
	if drop := len(r.b) + len(p) - c; drop > 0 {
		r.b = r.b[:copy(r.b, r.b[drop:])]
	}
	r.b = append(r.b, p...)
}

// Add appends p, dropping the oldest bytes beyond ReplayBytes.
func (r *ReplayBuf) Add(p []byte) {
	if len(p) >= ReplayBytes {
		p = p[len(p)-ReplayBytes:]
	}
	if drop := len(r.b) + len(p) - ReplayBytes; drop > 0 {
		r.b = r.b[:copy(r.b, r.b[drop:])]
	}
	if need := len(r.b) + len(p); need > cap(r.b) {
		nb := make([]byte, len(r.b), min(max(2*cap(r.b), need, 64<<10), ReplayBytes))
		copy(nb, r.b)
		r.b = nb
	}
	r.b = append(r.b, p...)
}
