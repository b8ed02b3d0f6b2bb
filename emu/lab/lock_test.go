package lab

import (
	"errors"
	"testing"
)

// TestLockInUse: a second taker of a held name gets an error that
// errors.Is matches to ErrInUse (agent/runner then tries another name),
// and the name is free again once released.
func TestLockInUse(t *testing.T) {
	skipIfNoLab(t)
	name := testName("lock")
	l, err := acquireLock(name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = acquireLock(name)
	if !errors.Is(err, ErrInUse) {
		l.release()
		t.Fatalf("second taker of a held name: %v, want ErrInUse", err)
	}
	l.release()
	l2, err := acquireLock(name)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.release()
}
