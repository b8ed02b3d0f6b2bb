package sim

import (
	"testing"
	"time"
)

// OnArrive sees each chunk's first copy once, with its stream offset, and
// OnChunkAcked each chunk once, even on a lossy path with retransmissions.
func TestArriveAndAckHooks(t *testing.T) {
	s, c := streamsConn(t, ConnConfig{}, 1, 10, 20*time.Millisecond, 0.05)
	arrived := map[[2]int]int{}
	c.Receiver().OnArrive = func(stream, off, path int, sent, at time.Duration) {
		arrived[[2]int{stream, off}]++
		if path != 0 || at < sent+20*time.Millisecond {
			t.Errorf("chunk %d/%d: path %d, sent %v, arrived %v (one-way delay 20 ms)", stream, off, path, sent, at)
		}
	}
	acked := map[int]int{}
	c.OnChunkAcked = func(chunk, path int, now time.Duration) { acked[chunk]++ }
	var st *Stream
	s.At(0, func() {
		var err error
		if st, err = c.OpenStream(200*int64(c.Payload()), StreamOpts{}); err != nil {
			t.Error(err)
		}
	})
	s.Run(time.Minute, 0, nil)
	if len(arrived) != 200 || len(acked) != 200 {
		t.Fatalf("%d chunks arrived and %d acknowledged, want 200 each", len(arrived), len(acked))
	}
	for k, n := range arrived {
		if n != 1 || k[0] != st.ID() {
			t.Fatalf("chunk %v reported %d times", k, n)
		}
	}
	for ch, n := range acked {
		if n != 1 {
			t.Fatalf("chunk %d acknowledged %d times", ch, n)
		}
	}
}
