package uploadreplay

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/idlebody"
)

func body(n int) *idlebody.Body {
	data := bytes.Repeat([]byte{'x'}, n)
	for i := range data {
		data[i] = byte(i % 251)
	}
	return idlebody.New(io.NopCloser(bytes.NewReader(data)), func(time.Time) error { return nil })
}

// readSome reads n bytes (or to EOF) through b.
func readSome(t *testing.T, b *Body, n int) []byte {
	t.Helper()
	got, err := io.ReadAll(io.LimitReader(b, int64(n)))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRewindReplaysFromTheStart: an attempt that read part of the body
// and failed is followed by one that reads the same bytes from the first
// one, then the rest of the app's body; the pool gets every byte back on
// Drop.
func TestRewindReplaysFromTheStart(t *testing.T) {
	var pool Pool
	b := New(body(10_000), &pool)
	first := readSome(t, b, 4000)
	if !b.Rewind() {
		t.Fatal("a body within the budget does not rewind")
	}
	again := readSome(t, b, 10_000)
	if len(again) != 10_000 || !bytes.Equal(again[:4000], first) {
		t.Fatalf("second attempt read %d bytes; its first 4000 equal the first attempt's: %v", len(again), bytes.Equal(again[:4000], first))
	}
	for i, c := range again {
		if c != byte(i%251) {
			t.Fatalf("byte %d is %d, want %d", i, c, i%251)
		}
	}
	if pool.used.Load() != 10_000 {
		t.Fatalf("pool holds %d bytes, want 10000", pool.used.Load())
	}
	b.Drop()
	if pool.used.Load() != 0 {
		t.Fatalf("pool holds %d bytes after Drop", pool.used.Load())
	}
}

// TestBudgets: a body over PerRequest, or one that finds the pool full,
// reads on but can no longer rewind, and keeps nothing in the pool.
func TestBudgets(t *testing.T) {
	for _, c := range []struct {
		name     string
		size     int
		poolUsed int64
	}{
		{"over the per-request budget", PerRequest + 1, 0},
		{"pool full", 1000, Total - 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pool Pool
			pool.used.Store(c.poolUsed)
			b := New(body(c.size), &pool)
			if got := readSome(t, b, c.size); len(got) != c.size {
				t.Fatalf("read %d of %d bytes", len(got), c.size)
			}
			if b.Rewind() {
				t.Fatal("rewound past the budget")
			}
			if pool.used.Load() != c.poolUsed {
				t.Fatalf("pool holds %d bytes, want the %d it had", pool.used.Load(), c.poolUsed)
			}
		})
	}
}
