package pathchoice

import (
	"testing"
	"time"
)

// TestLearnedPathSet: the learned scheduler chooses (and learns) a path
// added while running, never one removed, and refuses an id twice.
func TestLearnedPathSet(t *testing.T) {
	s, err := NewScheduler(SchedLearned, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	ps, ok := s.(PathSet)
	if !ok {
		t.Fatal("the learned scheduler is not a PathSet")
	}
	views := []PathView{{ID: 0, SRTT: time.Millisecond}, {ID: 1, SRTT: time.Millisecond}, {ID: 2, SRTT: time.Millisecond}}
	if err := ps.RemovePath(0); err != nil {
		t.Fatal(err)
	}
	if err := ps.AddPath(2); err != nil {
		t.Fatal(err)
	}
	if err := ps.AddPath(2); err == nil {
		t.Fatal("path 2 added twice")
	}
	picked := map[int]int{}
	for range 200 {
		id := s.Pick(Request{}, views)
		picked[id]++
		s.Done(id, 1<<20, time.Duration(1+id)*100*time.Millisecond)
	}
	if picked[0] != 0 || picked[2] == 0 {
		t.Fatalf("picks %v: want none of removed path 0 and some of added path 2", picked)
	}
	for _, name := range []string{SchedMinRTT, SchedRR, SchedLOB, SchedPriority, SchedECT} {
		s, _ := NewScheduler(name, 2, 1)
		if _, ok := s.(PathSet); ok {
			t.Errorf("%s keeps no state per path but is a PathSet", name)
		}
	}
}
