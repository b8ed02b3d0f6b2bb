// Package figure holds what every hetquic figure shares: the palette, line
// styles, a plot with a grid, and saving every figure twice, as PNG (for
// reports and READMEs) and SVG (vector, what goes into papers), with the
// legend in a column to the right of the plot so that a dozen lines never
// hide the data.
//
// Line i is told apart by three things at once: its colour (12 colours:
// Tableau 10, black and a deep violet, so 12 strategies in one plot never
// share a colour), its dash pattern (5, cycling with i), and a marker
// shape placed at a few points along it (AddLine; 7 shapes). Any two of
// the first 60 lines differ in colour or dash, the whole style repeats only
// every 420 lines, and the markers keep lines apart in greyscale print.
package figure

import (
	"bufio"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette is Tableau 10 (distinguishable, and colour-blind safer than
// gonum's default) and two colours unlike any of them, black and a deep
// violet, for the 11th and 12th line.
var palette = []color.Color{
	rgb(0x4E79A7), rgb(0xF28E2B), rgb(0xE15759), rgb(0x76B7B2), rgb(0x59A14F),
	rgb(0xEDC948), rgb(0xB07AA1), rgb(0xFF9DA7), rgb(0x9C755F), rgb(0x8C8C8C),
	rgb(0x000000), rgb(0x4B2991),
}

func rgb(v uint32) color.Color {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

// Color is the i-th colour of the palette.
func Color(i int) color.Color { return palette[i%len(palette)] }

// dashes are the line patterns. With 12 colours and 5 patterns, (colour,
// dash) pairs repeat only after lcm(12, 5) = 60 lines; with the 7 markers
// the whole style repeats after lcm(12, 5, 7) = 420 lines.
var dashes = [][]vg.Length{
	nil, // solid
	{vg.Points(5), vg.Points(2.5)},
	{vg.Points(1.2), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(1.2), vg.Points(2)},
	{vg.Points(10), vg.Points(3)},
}

// shapes are the markers AddLine puts along line i.
var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{},
}

// LineStyle is the style of the i-th line of a figure: colour i mod 12 and
// dash pattern i mod 5, so lines 0–59 all differ in colour or pattern.
func LineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: Color(i), Width: vg.Points(1.2), Dashes: dashes[i%len(dashes)]}
}

// Glyph is the marker of the i-th line: shape i mod 7, in its colour.
func Glyph(i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: Color(i), Radius: vg.Points(2.6), Shape: shapes[i%len(shapes)]}
}

// markers is how many markers AddLine puts along a line: enough to read a
// line's identity anywhere in the plot, few enough not to hide it.
const markers = 8

// AddLine adds xys to p as the i-th line: LineStyle(i), with Glyph(i)
// markers at evenly spaced points along it (offset by i so that markers of
// lines that lie on top of each other do not coincide). It returns the
// legend entry for label.
func AddLine(p *plot.Plot, i int, label string, xys plotter.XYs) (Entry, error) {
	e := Entry{Label: label, Style: LineStyle(i), Glyph: Glyph(i)}
	l, err := plotter.NewLine(Thin(xys, maxLinePoints))
	if err != nil {
		return e, err
	}
	l.LineStyle = e.Style
	p.Add(l)
	if len(xys) == 0 {
		return e, nil
	}
	step := max(1, len(xys)/markers)
	var pts plotter.XYs
	for k := (i * step / 7) % step; k < len(xys); k += step {
		pts = append(pts, xys[k])
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return e, err
	}
	sc.GlyphStyle = e.Glyph
	p.Add(sc)
	return e, nil
}

// NewPlot is a plot with a title, axis labels and a grid.
func NewPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Tick.Marker, p.Y.Tick.Marker = NiceTicks{}, NiceTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// Entry is one legend line: the line's style and, when Glyph.Shape is not
// nil, its marker.
type Entry struct {
	Label string
	Style draw.LineStyle
	Glyph draw.GlyphStyle
}

// Size is a figure's size and the width of its legend column.
type Size struct{ W, H, Legend vg.Length }

// SaveWithLegend draws p with the entries in a legend column to its right
// and writes name (a .png) and its .svg twin (see Save).
func SaveWithLegend(name string, p *plot.Plot, entries []Entry, size Size) error {
	return Save(name, size.W, size.H, func(dc draw.Canvas) {
		p.Draw(draw.Crop(dc, 0, -size.Legend, 0, 0))
		leg := plot.NewLegend()
		leg.Top, leg.Left = true, true
		leg.ThumbnailWidth = vg.Points(22)
		for _, e := range entries {
			leg.Add(e.Label, thumb(e))
		}
		leg.Draw(draw.Crop(dc, size.W-size.Legend+vg.Points(8), 0, 0, -vg.Points(30)))
	})
}

// thumb is a legend entry drawing a line in its style, with its marker.
type thumb Entry

func (t thumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.Style, c.Min.X, y, c.Max.X, y)
	if t.Glyph.Shape != nil {
		c.DrawGlyphNoClip(t.Glyph, c.Center())
	}
}

// SVGName is the SVG twin of a figure file name: x.png → x.svg.
func SVGName(png string) string {
	return strings.TrimSuffix(png, filepath.Ext(png)) + ".svg"
}

// Save draws a w × h figure twice, into name (PNG, which must end in .png)
// and into SVGName(name) (SVG, fonts referenced, not embedded). draw is
// called once per format and must draw the same thing both times.
func Save(name string, w, h vg.Length, drawFig func(draw.Canvas)) error {
	if filepath.Ext(name) != ".png" {
		return fmt.Errorf("figure %s: the name must end in .png (the .svg is written beside it)", name)
	}
	img := vgimg.New(w, h)
	drawFig(draw.New(img))
	if err := writeFile(name, func(w io.Writer) error { return pngEncoder.Encode(w, img.Image()) }); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	drawFig(draw.New(svg))
	return writeFile(SVGName(name), func(w io.Writer) error {
		_, err := svg.WriteTo(w)
		return err
	})
}

// pngEncoder writes figures at zlib's fastest level: at the default level
// deflate's match search was half the CPU an experiment spends on its
// report (its figures are flat colours and lines, which the fastest level
// already compresses well).
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// writeFile writes name through write, buffered.
func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	b := bufio.NewWriter(f)
	if err := write(b); err != nil {
		f.Close()
		return err
	}
	if err := b.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Bars writes a bar chart to name (PNG, and its SVG twin): one bar per label, each in its own
// colour and with its value above it, for experiments whose result is a
// handful of modes side by side.
func Bars(name, title, y string, labels []string, values []float64) error {
	p := NewPlot(title, "", y)
	top := 0.0
	var at plotter.XYLabels
	for i, v := range values {
		b, err := plotter.NewBarChart(plotter.Values{v}, vg.Points(50))
		if err != nil {
			return err
		}
		b.Color, b.LineStyle.Width = Color(i), 0
		b.XMin = float64(i)
		p.Add(b)
		top = max(top, v)
		at.XYs = append(at.XYs, plotter.XY{X: float64(i), Y: v})
		at.Labels = append(at.Labels, fmt.Sprintf("%.3g", v))
	}
	if len(values) > 0 {
		l, err := plotter.NewLabels(at)
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
		}
		p.Add(l)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min, p.Y.Max = 0, max(top*1.15, 1e-9)
	return Save(name, vg.Points(max(560, 160+100*float64(len(labels)))), vg.Points(400), p.Draw)
}
