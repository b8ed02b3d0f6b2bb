// Package results writes what an experiment produced, the same way for
// every mode (offline, trace, real, sim, agent), into one directory:
//
//   - CSV tables, through encoding/csv (CreateCSV);
//   - summary.json, whose top-level object opens with the Header fields
//     (schema_version first) followed by the mode's own fields
//     (WriteSummary; the schema is documented in docs/results.md);
//   - report.md (WriteReport), whose tables are Table values, so that
//     `hetquic exp run NAME --md` prints exactly the report's tables;
//   - figures, each a PNG and its SVG twin (internal/figure; AddFigure
//     records both).
//
// Dir.Files lists everything written, in order, for the command's
// "wrote N files" line and for tests.
package results

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic/internal/figure"
)

// SchemaVersion is the version of summary.json's layout. It changes when a
// field is renamed, removed or changes meaning (adding a field does not),
// so a reader of golden files can tell an old file from a regression.
//
//	1: first versioned layout (Header; offline/trace/real "strategies",
//	   sim "summaries").
const SchemaVersion = 1

// Header opens every summary.json. Each mode's summary type embeds it.
type Header struct {
	SchemaVersion int    `json:"schema_version"`
	Experiment    string `json:"experiment"` // the spec's name
	// Mode is offline, trace, real, sim or agent.
	Mode  string   `json:"mode"`
	Seeds []uint64 `json:"seeds"` // every seed run, in order
	// Provenance is the build and machine that wrote the file (Stamp;
	// WriteSummary stamps it). Absent from a summary only marshalled.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// NewHeader is the header of an experiment's summary at SchemaVersion.
func NewHeader(experiment, mode string, seeds []uint64) Header {
	return Header{SchemaVersion: SchemaVersion, Experiment: experiment, Mode: mode, Seeds: seeds}
}

// Seeds is first, first+1, …, first+n−1: how every spec numbers its seeds.
func Seeds(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// Summary is what WriteSummary accepts: a mode's summary that embeds
// Header.
type Summary interface{ header() *Header }

func (h *Header) header() *Header { return h }

// Dir is an output directory being written.
type Dir struct {
	path  string
	files []string
}

// Create makes (if needed) the directory path for an experiment's outputs.
func Create(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &Dir{path: path}, nil
}

// Path is name (slash-separated, relative) inside the directory; it makes
// the parent directories of name.
func (d *Dir) Path(name string) (string, error) {
	p := filepath.Join(d.path, filepath.FromSlash(name))
	return p, os.MkdirAll(filepath.Dir(p), 0o755)
}

// Root is the directory itself.
func (d *Dir) Root() string { return d.path }

// Files are the files written so far, in order.
func (d *Dir) Files() []string { return d.files }

// add records files written by someone else into the directory.
func (d *Dir) add(paths ...string) { d.files = append(d.files, paths...) }

// AddFigure records a figure written with internal/figure (png is the PNG's
// path; its SVG twin is recorded too) and returns png.
func (d *Dir) AddFigure(png string) string {
	d.add(png, figure.SVGName(png))
	return png
}

// CSV is a CSV file being written row by row (RFC 4180 quoting, through
// encoding/csv, so a label with a comma or quote stays one field).
type CSV struct {
	f    *os.File
	z    *gzip.Writer // nil unless the name ends in .gz
	b    *bufio.Writer
	w    *csv.Writer
	name string
	cols int
}

// CreateCSV starts name (relative to the directory) with the header row. A
// name ending in .gz is written gzip-compressed (what pandas, R and zcat
// read as they are), for tables too long to ship plain; the stream carries
// no time stamp, so equal rows give equal bytes.
func (d *Dir) CreateCSV(name string, header ...string) (*CSV, error) {
	p, err := d.Path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	c := &CSV{f: f, name: name, cols: len(header)}
	var dst io.Writer = f
	if strings.HasSuffix(name, ".gz") {
		c.z = gzip.NewWriter(f)
		dst = c.z
	}
	c.b = bufio.NewWriterSize(dst, 1<<16)
	c.w = csv.NewWriter(c.b)
	if err := c.w.Write(header); err != nil {
		f.Close()
		return nil, err
	}
	d.add(p)
	return c, nil
}

// Row writes one record; it must have as many fields as the header.
func (c *CSV) Row(fields ...string) error {
	if len(fields) != c.cols {
		return fmt.Errorf("%s: row of %d fields under a header of %d", c.name, len(fields), c.cols)
	}
	return c.w.Write(fields)
}

// Close flushes and closes the file; the first write error, if any, is
// returned here.
func (c *CSV) Close() error {
	c.w.Flush()
	err := c.w.Error()
	if err == nil {
		err = c.b.Flush()
	}
	if c.z != nil {
		if zerr := c.z.Close(); err == nil {
			err = zerr
		}
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// WriteCSV writes a whole CSV file of n rows, row(i) giving row i.
func (d *Dir) WriteCSV(name string, header []string, n int, row func(i int) []string) error {
	c, err := d.CreateCSV(name, header...)
	if err != nil {
		return err
	}
	for i := range n {
		if err := c.Row(row(i)...); err != nil {
			c.Close()
			return err
		}
	}
	return c.Close()
}

// WriteSummary writes s as summary.json (indented, one trailing newline),
// stamped with the current provenance (Stamp).
// It fails, naming the problem, when the header is missing or not at
// SchemaVersion, or when a number is NaN or infinite (JSON cannot hold
// one; the mode must say what "no data" is).
func (d *Dir) WriteSummary(s Summary) error {
	Stamp(s)
	data, err := MarshalSummary(s)
	if err != nil {
		return err
	}
	p, err := d.Path("summary.json")
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	d.add(p)
	return nil
}

// MarshalSummary is summary.json's bytes for s (what WriteSummary writes,
// and what `--json` prints).
func MarshalSummary(s Summary) ([]byte, error) {
	h := s.header()
	switch {
	case h.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("summary.json: schema_version %d, want %d (use results.NewHeader)", h.SchemaVersion, SchemaVersion)
	case h.Experiment == "" || h.Mode == "":
		return nil, fmt.Errorf("summary.json: experiment and mode must be set")
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("summary.json: %w", err)
	}
	return append(data, '\n'), nil
}

// Table is one table of a report: a caption above it, a note below it.
type Table struct {
	Caption string // optional, printed as a paragraph above the table
	Header  []string
	Rows    [][]string
	Note    string // optional, printed as a paragraph below the table
}

// Markdown renders t as a GitHub-flavoured Markdown table. A "|" inside a
// cell is escaped so it cannot split the cell.
func (t Table) Markdown() string {
	var b strings.Builder
	if t.Caption != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Caption)
	}
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|" + strings.Repeat("---|", len(t.Header)) + "\n")
	for _, r := range t.Rows {
		row(r)
	}
	if t.Note != "" {
		fmt.Fprintf(&b, "\n%s\n", t.Note)
	}
	return b.String()
}

// WriteTables writes the tables' Markdown separated by blank lines: what
// `hetquic exp run NAME --md` prints, and what doc markers paste. It must
// hold nothing that varies between runs (no timings, no paths).
func WriteTables(w io.Writer, tables []Table) error {
	for i, t := range tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, t.Markdown()); err != nil {
			return err
		}
	}
	return nil
}

// WriteReport writes report.md: markdown, which a mode builds around its
// Tables (setup above, figures below), and the provenance line last.
func (d *Dir) WriteReport(markdown string) error {
	p, err := d.Path("report.md")
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(markdown+ProvenanceLine()), 0o644); err != nil {
		return err
	}
	d.add(p)
	return nil
}

// FigureMarkdown is a report's reference to a figure beside report.md: the
// PNG shown, the SVG linked, with a caption.
func FigureMarkdown(png, caption string) string {
	base := filepath.Base(png)
	svg := figure.SVGName(base)
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", strings.TrimSuffix(base, ".png"))
	if caption != "" {
		fmt.Fprintf(&b, "%s\n\n", caption)
	}
	fmt.Fprintf(&b, "![%s](%s)\n\nVector version: [%s](%s).\n\n", base, base, svg, svg)
	return b.String()
}
