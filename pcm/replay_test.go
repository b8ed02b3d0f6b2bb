package pcm

import (
	"fmt"
	"testing"
)

// TestReplayUrgencyOf: a failover's replays, ranked oldest first, get
// urgencies in groups that double (one per slow-start round trip), the
// oldest alone in u=0, every one above the fresh requests' level, and
// never a younger one ahead of an older one.
func TestReplayUrgencyOf(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int8 // by rank
	}{
		{1, []int8{0}},
		{4, []int8{0, 1, 1, 2}},
		{8, []int8{0, 1, 1, 2, 2, 2, 2, 3}},
	} {
		for r, w := range tc.want {
			if got := replayUrgencyOf(r, tc.n); got != w {
				t.Errorf("replayUrgencyOf(%d, %d) = %d, want %d", r, tc.n, got, w)
			}
		}
	}
	// About a hundred replays (the cuts' load): unit 1, the levels hold
	// 1, 2, 4, 8, 16, 32 and the rest.
	bounds := []int{0, 1, 3, 7, 15, 31, 63}
	for u, first := range bounds {
		if got := replayUrgencyOf(first, 115); got != int8(u) {
			t.Errorf("replayUrgencyOf(%d, 115) = %d, want %d (a level's first rank)", first, got, u)
		}
	}
	if got := replayUrgencyOf(114, 115); got != replayLevels-1 {
		t.Errorf("the youngest of 115: u=%d, want %d", got, replayLevels-1)
	}
	// 128 and more: the unit grows, the oldest level still holds the
	// oldest, and the last level is never overfilled past n.
	if replayUrgencyOf(1, 128) != 0 || replayUrgencyOf(2, 128) != 1 {
		t.Errorf("128 replays: unit 2 expected: u(1) = %d, u(2) = %d", replayUrgencyOf(1, 128), replayUrgencyOf(2, 128))
	}
	for n := 1; n <= 2000; n++ {
		prev := int8(0)
		for r := range n {
			u := replayUrgencyOf(r, n)
			if u < prev || u < 0 || u >= freshUrgency {
				t.Fatalf("replayUrgencyOf(%d, %d) = %d after %d: want non-decreasing in [0, %d)", r, n, u, prev, freshUrgency)
			}
			prev = u
		}
		if n >= 1<<replayLevels-1 && prev != replayLevels-1 {
			t.Fatalf("%d replays use levels up to %d only, want all %d", n, prev, replayLevels)
		}
	}
}

// The Priority fields are RFC 9218's structured fields, one per level,
// and fresh requests' comes after every replay's.
func TestReplayPriorityFields(t *testing.T) {
	for u, f := range replayPriority {
		if want := fmt.Sprintf("u=%d", u); f != want {
			t.Errorf("replayPriority[%d] = %q, want %q", u, f, want)
		}
	}
	if want := fmt.Sprintf("u=%d, i", freshUrgency); freshPriority != want {
		t.Errorf("freshPriority = %q, want %q", freshPriority, want)
	}
	if freshUrgency > 7 {
		t.Errorf("freshUrgency %d: RFC 9218 urgencies end at 7", freshUrgency)
	}
}
