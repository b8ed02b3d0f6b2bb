package env

import (
	"context"
	"errors"
	"testing"

	"github.com/hetquic/hetquic/ride"
)

// An episode stops with the context's error once it is cancelled (Ctrl-C
// during a long evaluation), and runs whole otherwise.
func TestRunContextStops(t *testing.T) {
	cfg := Config{Seed: 3, Video: 0, Frames: 300, Start: 0}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunContext(ctx, cfg, ride.MinRTT{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if e, err := RunContext(context.Background(), cfg, ride.MinRTT{}); err != nil || !e.Done() {
		t.Fatalf("whole episode: %v", err)
	}
}
