// Package dataset reads and writes RIDE's inputs in the file formats of the
// 360° video dataset the thesis uses (Lo et al., "360° Video Viewing
// Dataset in Head-Mounted Virtual Reality", MMSys 2017; thesis §5.5.1).
// The dataset itself cannot be shipped (no licence is stated), so hetquic
// generates videos and head traces (package ride) and writes them in the
// same formats; a user with the real data points the loader at it.
//
// Formats (one CSV per user and video in the dataset's sensory traces):
//
//   - orientation.csv: header "no. frames,raw x,raw y,raw z,raw yaw,raw
//     pitch,raw roll", then one row per frame; yaw and pitch in degrees.
//   - tile.csv: header "no. frames,tile numbers", then one row per frame:
//     the frame number and the viewed tiles, numbered 1…200 in raster order
//     of the 10×20 grid.
//
// Frame numbers must be consecutive from the first row's number (0 or 1).
// The dataset has no tile sizes; the thesis gets them with FFmpeg (frame
// type and size) and the saliency maps (a tile's share of its frame). The
// loader reads those two derived files:
//
//   - frames.csv: header "frame,type,bytes", one row per frame in display
//     order: type I, P or B, and the frame's size in bytes (for instance
//     from `ffprobe -show_frames -of csv=p=0 -show_entries
//     frame=pict_type,pkt_size`).
//   - saliency.csv (optional): header "frame,s1,…,s200", one row per frame
//     of the 200 tiles' saliency values (the saliency map averaged per
//     tile, ≥ 0). Without it the frame splits evenly.
//
// Every error names the file and line.
package dataset

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strconv"
	"strings"

	"github.com/hetquic/hetquic/ride"
)

// Headers of the formats above.
const (
	OrientationHeader = "no. frames,raw x,raw y,raw z,raw yaw,raw pitch,raw roll"
	TileHeader        = "no. frames,tile numbers"
	FramesHeader      = "frame,type,bytes"
)

// lineError is an error at file:line.
func lineError(name string, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
}

// rows reads a CSV with a header line and variable-length rows, calling fn
// with each row's 1-based line number; it checks that the first field is a
// frame number consecutive with the previous row's.
func rows(name string, r io.Reader, header string, fn func(line, frame int, rec []string) error) (frames int, err error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	first := true
	next := -1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return 0, lineError(name, pe.Line, "%v", pe.Err)
			}
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if got := strings.Join(trimAll(rec), ","); !strings.EqualFold(got, header) {
				return 0, lineError(name, line, "header %q, want %q", got, header)
			}
			continue
		}
		f, err := strconv.Atoi(strings.TrimSpace(rec[0]))
		if err != nil {
			return 0, lineError(name, line, "frame number %q is not an integer", rec[0])
		}
		switch {
		case next < 0 && f != 0 && f != 1:
			return 0, lineError(name, line, "first frame is %d, want 0 or 1", f)
		case next >= 0 && f != next:
			return 0, lineError(name, line, "frame %d follows frame %d: frame %d is missing or out of order", f, next-1, next)
		}
		next = f + 1
		if err := fn(line, frames, rec[1:]); err != nil {
			return 0, err
		}
		frames++
	}
	if first {
		return 0, fmt.Errorf("%s: empty file, want the header %q", name, header)
	}
	if frames == 0 {
		return 0, fmt.Errorf("%s: no frames after the header", name)
	}
	return frames, nil
}

func trimAll(rec []string) []string {
	out := make([]string, len(rec))
	for i, s := range rec {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// ReadTiles reads a tile.csv into the viewport matrix v.
func ReadTiles(name string, r io.Reader) (*ride.Viewport, error) {
	vp := &ride.Viewport{}
	_, err := rows(name, r, TileHeader, func(line, _ int, rec []string) error {
		var row [ride.Tiles]bool
		for _, s := range rec {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			z, err := strconv.Atoi(s)
			if err != nil || z < 1 || z > ride.Tiles {
				return lineError(name, line, "tile %q: want an integer in 1…%d", s, ride.Tiles)
			}
			row[z-1] = true
		}
		vp.View = append(vp.View, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return vp, nil
}

// ReadOrientation reads an orientation.csv into a head trace (yaw, pitch).
func ReadOrientation(name string, r io.Reader) (ride.HeadTrace, error) {
	var h ride.HeadTrace
	_, err := rows(name, r, OrientationHeader, func(line, _ int, rec []string) error {
		if len(rec) != 6 {
			return lineError(name, line, "%d fields after the frame number, want 6 (x, y, z, yaw, pitch, roll)", len(rec))
		}
		var vals [6]float64
		for k, s := range rec {
			x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return lineError(name, line, "field %d %q is not a finite number", k+2, s)
			}
			vals[k] = x
		}
		yaw, pitch := vals[3], vals[4]
		if yaw < -360 || yaw > 360 || pitch < -90 || pitch > 90 {
			return lineError(name, line, "yaw %v / pitch %v outside [-360, 360] / [-90, 90] degrees", yaw, pitch)
		}
		h.Yaw = append(h.Yaw, math.Mod(yaw+540, 360)-180)
		h.Pitch = append(h.Pitch, pitch)
		return nil
	})
	return h, err
}

// ReadVideo reads frames.csv and, when saliency is not nil, saliency.csv,
// and splits each frame's bytes among its tiles in proportion to their
// saliency (§5.5.1). The result has one quality level.
func ReadVideo(videoName, framesName string, frames io.Reader, saliencyName string, saliency io.Reader) (*ride.Video, error) {
	v := &ride.Video{Name: videoName, Levels: 1}
	var bytes []float64
	_, err := rows(framesName, frames, FramesHeader, func(line, _ int, rec []string) error {
		if len(rec) != 2 {
			return lineError(framesName, line, "%d fields after the frame number, want 2 (type, bytes)", len(rec))
		}
		t, err := ride.ParseFrameType(strings.TrimSpace(rec[0]))
		if err != nil {
			return lineError(framesName, line, "%v", err)
		}
		if len(v.Types) == 0 && t != ride.I {
			return lineError(framesName, line, "the first frame is %v, a video must start with an I frame", t)
		}
		b, err := strconv.ParseInt(strings.TrimSpace(rec[1]), 10, 64)
		if err != nil {
			return lineError(framesName, line, "bytes %q is not an integer", rec[1])
		}
		if b < ride.Tiles || b > math.MaxInt32 {
			return lineError(framesName, line, "frame size %d bytes: want %d…%d (at least one byte per tile)", b, ride.Tiles, math.MaxInt32)
		}
		v.Types = append(v.Types, t)
		bytes = append(bytes, float64(b))
		return nil
	})
	if err != nil {
		return nil, err
	}
	shares := make([][ride.Tiles]float64, len(bytes))
	if saliency != nil {
		n, err := rows(saliencyName, saliency, saliencyHeader(), func(line, i int, rec []string) error {
			if len(rec) != ride.Tiles {
				return lineError(saliencyName, line, "%d saliency values, want %d", len(rec), ride.Tiles)
			}
			if i >= len(bytes) {
				return lineError(saliencyName, line, "frame beyond the %d frames of %s", len(bytes), framesName)
			}
			sum := 0.0
			for z, s := range rec {
				x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
					return lineError(saliencyName, line, "tile %d saliency %q: want a finite number ≥ 0", z+1, s)
				}
				shares[i][z] = x
				sum += x
			}
			if sum <= 0 {
				return lineError(saliencyName, line, "all saliency values are 0")
			}
			for z := range shares[i] {
				shares[i][z] /= sum
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n != len(bytes) {
			return nil, fmt.Errorf("%s: %d frames, but %s has %d", saliencyName, n, framesName, len(bytes))
		}
	} else {
		for i := range shares {
			for z := range shares[i] {
				shares[i][z] = 1.0 / ride.Tiles
			}
		}
	}
	v.Size = make([][ride.Tiles][]int32, len(bytes))
	for i, b := range bytes {
		for z := range v.Size[i] {
			v.Size[i][z] = []int32{int32(max(1, math.Round(b*shares[i][z])))}
		}
	}
	return v, v.Validate()
}

func saliencyHeader() string {
	var b strings.Builder
	b.WriteString("frame")
	for z := 1; z <= ride.Tiles; z++ {
		fmt.Fprintf(&b, ",s%d", z)
	}
	return b.String()
}

// Load reads one user's viewport (tile.csv) and a video (frames.csv and
// saliency.csv when present) from fsys.
func Load(fsys fs.FS, videoName, framesPath, saliencyPath, tilePath string) (*ride.Video, *ride.Viewport, error) {
	open := func(p string) (fs.File, error) {
		f, err := fsys.Open(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return f, nil
	}
	ff, err := open(framesPath)
	if err != nil {
		return nil, nil, err
	}
	defer ff.Close()
	var sal io.Reader
	if saliencyPath != "" {
		sf, err := open(saliencyPath)
		if err != nil {
			return nil, nil, err
		}
		defer sf.Close()
		sal = sf
	}
	v, err := ReadVideo(videoName, framesPath, ff, saliencyPath, sal)
	if err != nil {
		return nil, nil, err
	}
	tf, err := open(tilePath)
	if err != nil {
		return nil, nil, err
	}
	defer tf.Close()
	vp, err := ReadTiles(tilePath, tf)
	if err != nil {
		return nil, nil, err
	}
	if len(vp.View) < v.Frames() {
		return nil, nil, fmt.Errorf("%s: %d frames, fewer than the %d of %s", tilePath, len(vp.View), v.Frames(), framesPath)
	}
	vp.View = vp.View[:v.Frames()]
	return v, vp, nil
}

// WriteTiles writes vp as a tile.csv (frames numbered from 1).
func WriteTiles(w io.Writer, vp *ride.Viewport) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, TileHeader)
	for i, row := range vp.View {
		fmt.Fprintf(bw, "%d", i+1)
		for z, in := range row {
			if in {
				fmt.Fprintf(bw, ",%d", z+1)
			}
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// WriteOrientation writes h as an orientation.csv (frames from 1; the
// unit vector x, y, z of the gaze and roll 0).
func WriteOrientation(w io.Writer, h ride.HeadTrace) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, OrientationHeader)
	for i := range h.Yaw {
		y, p := h.Yaw[i]*math.Pi/180, h.Pitch[i]*math.Pi/180
		fmt.Fprintf(bw, "%d,%.6f,%.6f,%.6f,%.4f,%.4f,0\n", i+1, math.Cos(p)*math.Sin(y), math.Sin(p), math.Cos(p)*math.Cos(y), h.Yaw[i], h.Pitch[i])
	}
	return bw.Flush()
}

// WriteFrames writes v's frame types and sizes at quality level q as a
// frames.csv, and its per-tile shares as a saliency.csv.
func WriteFrames(frames, saliency io.Writer, v *ride.Video, q int) error {
	fw, sw := bufio.NewWriter(frames), bufio.NewWriter(saliency)
	fmt.Fprintln(fw, FramesHeader)
	fmt.Fprintln(sw, saliencyHeader())
	for i, t := range v.Types {
		var total int64
		for z := range v.Size[i] {
			total += int64(v.Size[i][z][q])
		}
		fmt.Fprintf(fw, "%d,%v,%d\n", i+1, t, total)
		fmt.Fprintf(sw, "%d", i+1)
		for z := range v.Size[i] {
			fmt.Fprintf(sw, ",%d", v.Size[i][z][q])
		}
		fmt.Fprintln(sw)
	}
	if err := fw.Flush(); err != nil {
		return err
	}
	return sw.Flush()
}
