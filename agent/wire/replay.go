package wire

// ReplayBuf keeps the last Max bytes of a tunnel direction. It grows as
// it fills and never beyond Max (append's growth would take it to about
// 1.25× that), so a tunnel costs at most Max here.
type ReplayBuf struct {
	b []byte
	// Max is the most the buffer keeps: the receive window the peer
	// grants the direction and its reader's buffers (ReplayBytes when 0,
	// ReplayDownBytes for ct-server's bytes down).
	Max int
}

// limit is Max or its default.
func (r *ReplayBuf) limit() int {
	if r.Max > 0 {
		return r.Max
	}
	return ReplayBytes
}

// Bytes is what the buffer holds, oldest first; it ends at the last byte
// added.
func (r *ReplayBuf) Bytes() []byte { return r.b }

// Cap is the memory the buffer holds now.
func (r *ReplayBuf) Cap() int { return cap(r.b) }

// Free lets the buffer's memory go.
func (r *ReplayBuf) Free() { r.b = nil }

// Growth is how many bytes Add of n bytes adds to the buffer's memory.
func (r *ReplayBuf) Growth(n int) int {
	limit := r.limit()
	n = min(n, limit)
	keep := min(len(r.b), limit-n)
	if need := keep + n; need > cap(r.b) {
		return min(max(2*cap(r.b), need, 64<<10), limit) - cap(r.b)
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

// Add appends p, dropping the oldest bytes beyond Max.
func (r *ReplayBuf) Add(p []byte) {
	limit := r.limit()
	if len(p) >= limit {
		p = p[len(p)-limit:]
	}
	if drop := len(r.b) + len(p) - limit; drop > 0 {
		r.b = r.b[:copy(r.b, r.b[drop:])]
	}
	if need := len(r.b) + len(p); need > cap(r.b) {
		nb := make([]byte, len(r.b), min(max(2*cap(r.b), need, 64<<10), limit))
		copy(nb, r.b)
		r.b = nb
	}
	r.b = append(r.b, p...)
}
