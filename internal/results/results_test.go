package results

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hetquic/hetquic/internal/figure"
)

type fakeSummary struct {
	Header
	Value float64 `json:"value"`
}

func TestCSVQuotesAndCounts(t *testing.T) {
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.CreateCSV("sub/rounds.csv", "label", "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Row(`PSA, a="0.5"`, "1.5"); err != nil {
		t.Fatal(err)
	}
	if err := c.Row("too", "many", "fields"); err == nil {
		t.Fatal("a row wider than the header was accepted")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(d.Root(), "sub", "rounds.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1][0] != `PSA, a="0.5"` || recs[1][1] != "1.5" {
		t.Fatalf("read back %q", recs)
	}
	if len(d.Files()) != 1 {
		t.Fatalf("files %v", d.Files())
	}
}

func TestSummaryHeaderAndNaN(t *testing.T) {
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSummary{Header: NewHeader("x", "offline", Seeds(3, 2)), Value: 1}
	if err := d.WriteSummary(s); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(d.Root(), "summary.json"))
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["schema_version"] != float64(SchemaVersion) || m["mode"] != "offline" || m["value"] != 1.0 {
		t.Fatalf("summary.json: %s", data)
	}
	if !bytes.HasPrefix(data, []byte("{\n  \"schema_version\": ")) {
		t.Fatalf("schema_version is not the first field: %s", data)
	}
	if seeds := m["seeds"].([]any); len(seeds) != 2 || seeds[0] != 3.0 || seeds[1] != 4.0 {
		t.Fatalf("seeds %v", seeds)
	}
	if err := d.WriteSummary(&fakeSummary{Header: NewHeader("x", "sim", nil), Value: math.NaN()}); err == nil {
		t.Fatal("NaN accepted")
	}
	if err := d.WriteSummary(&fakeSummary{Header: Header{Experiment: "x", Mode: "sim"}}); err == nil || !strings.Contains(err.Error(), "schema_version") {
		t.Fatalf("missing version: %v", err)
	}
}

func TestTableMarkdown(t *testing.T) {
	tb := Table{Caption: "Cap", Header: []string{"a", "b"}, Rows: [][]string{{"1", "x|y"}}, Note: "Note."}
	want := "Cap\n\n| a | b |\n|---|---|\n| 1 | x\\|y |\n\nNote.\n"
	if got := tb.Markdown(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var b bytes.Buffer
	if err := WriteTables(&b, []Table{{Header: []string{"h"}}, {Header: []string{"g"}}}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "| h |\n|---|\n\n| g |\n|---|\n" {
		t.Fatalf("tables: %q", b.String())
	}
}

func TestFigureWritesPNGAndSVG(t *testing.T) {
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := figure.NewPlot("t", "x", "y")
	var entries []figure.Entry
	for i := range 14 { // more lines than colours
		e, err := figure.AddLine(p, i, "line", plotter.XYs{{X: 0, Y: float64(i)}, {X: 1, Y: float64(i + 1)}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	png, _ := d.Path("f.png")
	if err := figure.SaveWithLegend(png, p, entries, figure.Size{W: 6 * vg.Inch, H: 3 * vg.Inch, Legend: vg.Inch}); err != nil {
		t.Fatal(err)
	}
	d.AddFigure(png)
	files := d.Files()
	if len(files) != 2 || !strings.HasSuffix(files[1], "f.svg") {
		t.Fatalf("files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG")
	}
	s, _ := os.ReadFile(files[1])
	if !bytes.Contains(s, []byte("<svg")) || !bytes.Contains(s, []byte("stroke-dasharray")) {
		t.Fatalf("not an SVG with dashed lines: %.200s", s)
	}
	if md := FigureMarkdown(png, "cap"); !strings.Contains(md, "![f.png](f.png)") || !strings.Contains(md, "[f.svg](f.svg)") {
		t.Fatalf("figure markdown %q", md)
	}
}

// A .gz CSV reads back through gzip as the plain one would, and the same
// rows give the same bytes (no time stamp in the stream), which the shard
// merges' byte-for-byte comparisons rely on.
func TestCSVGzip(t *testing.T) {
	write := func() []byte {
		d, err := Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := d.WriteCSV("r.csv.gz", []string{"round", "label"}, 1000, func(i int) []string { return []string{strconv.Itoa(i), "PSA, b"} }); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(d.Root(), "r.csv.gz"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b := write(), write()
	if !bytes.Equal(a, b) {
		t.Error("the same rows gave different gzip bytes")
	}
	z, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(z).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1001 || recs[1000][0] != "999" || recs[1000][1] != "PSA, b" {
		t.Fatalf("read back %d records, last %q", len(recs), recs[len(recs)-1])
	}
	if len(a) > 1000*len("999,\"PSA, b\"\n")/2 {
		t.Errorf("%d bytes: not compressed", len(a))
	}
}
