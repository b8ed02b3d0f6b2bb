package figure

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBarsWritesPNG(t *testing.T) {
	name := filepath.Join(t.TempDir(), "bars.png")
	if err := Bars(name, "title", "y", []string{"a", "b", "c"}, []float64{1, 0.5, 2}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 2000 {
		t.Fatalf("not a drawn PNG: %d bytes", len(b))
	}
}
