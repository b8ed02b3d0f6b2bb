package wire

import (
	"bytes"
	"testing"
)

// TestReplayBufKeepsItsMax: a ReplayBuf keeps the last Max bytes added
// (ReplayBytes when Max is 0), oldest first, and its memory, as Growth
// reports it, never passes that: ct-server's buffer of a tunnel's bytes
// down must cover ct-client's grown window (ReplayDownBytes), ct-client's
// of the bytes up only ct-server's 1 MiB (ReplayBytes).
func TestReplayBufKeepsItsMax(t *testing.T) {
	for _, c := range []struct {
		name string
		max  int
		want int
	}{
		{"default", 0, ReplayBytes},
		{"down", ReplayDownBytes, ReplayDownBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ReplayBuf{Max: c.max}
			var all []byte
			chunk := make([]byte, 300<<10)
			for i := 0; len(all) < 2*c.want; i++ {
				for j := range chunk {
					chunk[j] = byte(i + j)
				}
				grown := r.Cap() + r.Growth(len(chunk))
				r.Add(chunk)
				all = append(all, chunk...)
				if r.Cap() != grown || r.Cap() > c.want {
					t.Fatalf("after %d bytes: memory %d, Growth said %d, want at most %d", len(all), r.Cap(), grown, c.want)
				}
			}
			if !bytes.Equal(r.Bytes(), all[len(all)-c.want:]) {
				t.Fatalf("keeps %d bytes, want the last %d of %d added", len(r.Bytes()), c.want, len(all))
			}
		})
	}
}

// TestReplayDownCoversDownWindow: ct-server's replay of a tunnel's bytes
// down covers the most ct-client's stream window grows to with the same
// room for the reader's buffers as ct-client's replay has over
// ct-server's window (the package comment's resume rule).
func TestReplayDownCoversDownWindow(t *testing.T) {
	if ReplayDownBytes-DownWindow < ReplayBytes-StreamWindow || ReplayBytes <= StreamWindow {
		t.Fatalf("replay down %d over window %d, replay up %d over window %d", ReplayDownBytes, DownWindow, ReplayBytes, StreamWindow)
	}
}
