// Package figure holds what every hetquic figure shares: the palette, line
// styles, a plot with a grid, and saving a PNG with the legend in a column
// to the right of the plot, so that a dozen lines never hide the data.
package figure

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette is Tableau 10: distinguishable, and colour-blind safer than
// gonum's default. Lines past the tenth also get dashes.
var palette = []color.Color{
	rgb(0x4E79A7), rgb(0xF28E2B), rgb(0xE15759), rgb(0x76B7B2), rgb(0x59A14F),
	rgb(0xEDC948), rgb(0xB07AA1), rgb(0xFF9DA7), rgb(0x9C755F), rgb(0x8C8C8C),
}

func rgb(v uint32) color.Color {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

// Color is the i-th colour of the palette.
func Color(i int) color.Color { return palette[i%len(palette)] }

// LineStyle is the style of the i-th line of a figure.
func LineStyle(i int) draw.LineStyle {
	s := draw.LineStyle{Color: Color(i), Width: vg.Points(1.2)}
	if i >= len(palette) {
		s.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	return s
}

// NewPlot is a plot with a title, axis labels and a grid.
func NewPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// Entry is one legend line.
type Entry struct {
	Label string
	Style draw.LineStyle
}

// Size is a figure's size and the width of its legend column.
type Size struct{ W, H, Legend vg.Length }

// SaveWithLegend draws p with the entries in a legend column to its right
// and writes the PNG to name.
func SaveWithLegend(name string, p *plot.Plot, entries []Entry, size Size) error {
	img := vgimg.New(size.W, size.H)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -size.Legend, 0, 0))
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(22)
	for _, e := range entries {
		leg.Add(e.Label, thumb(e.Style))
	}
	leg.Draw(draw.Crop(dc, size.W-size.Legend+vg.Points(8), 0, 0, -vg.Points(30)))
	return SavePNG(name, img)
}

// thumb is a legend entry drawing a line in its style.
type thumb draw.LineStyle

func (t thumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle(t), c.Min.X, y, c.Max.X, y)
}

// SavePNG writes img to name.
func SavePNG(name string, img *vgimg.Canvas) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Bars writes a bar chart to name: one bar per label, each in its own
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
	img := vgimg.New(vg.Points(max(560, 160+100*float64(len(labels)))), vg.Points(400))
	p.Draw(draw.New(img))
	return SavePNG(name, img)
}
