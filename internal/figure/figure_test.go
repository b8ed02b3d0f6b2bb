package figure

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/vg/draw"
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

func TestTwelveLinesAreDistinct(t *testing.T) {
	// Twelve lines share no colour; any two of the first 60 differ in
	// colour or dash pattern.
	colours := map[any]int{}
	for i := range 12 {
		if j, ok := colours[LineStyle(i).Color]; ok {
			t.Fatalf("lines %d and %d share a colour", j, i)
		}
		colours[LineStyle(i).Color] = i
	}
	type key struct {
		c      any
		dashes string
	}
	seen := map[key]int{}
	for i := range 60 {
		s := LineStyle(i)
		k := key{s.Color, fmt.Sprint(s.Dashes)}
		if j, ok := seen[k]; ok {
			t.Fatalf("lines %d and %d share colour and dashes", j, i)
		}
		seen[k] = i
	}
	if fmt.Sprintf("%T", Glyph(0).Shape) == fmt.Sprintf("%T", Glyph(1).Shape) {
		t.Fatal("neighbouring lines share a marker")
	}
}

func TestSaveWritesBothAndRejectsNonPNG(t *testing.T) {
	dir := t.TempDir()
	if err := Save(filepath.Join(dir, "x.svg"), 100, 100, func(draw.Canvas) {}); err == nil {
		t.Fatal("a .svg name was accepted")
	}
	name := filepath.Join(dir, "bars.png")
	if err := Bars(name, "t", "y", []string{"a"}, []float64{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(SVGName(name)); err != nil {
		t.Fatalf("no SVG twin: %v", err)
	}
}
