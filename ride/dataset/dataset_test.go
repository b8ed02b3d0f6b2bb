package dataset

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic/ride"
)

// A generated video and head trace written in the dataset's formats load
// back to the same viewport and sizes.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	v, err := ride.Generate(ride.GenConfig{Name: "gen", Seconds: 4}, rng)
	if err != nil {
		t.Fatal(err)
	}
	h := ride.GenerateHead(v.Frames(), ride.FoVConfig{}, rng)
	vp, err := ride.ViewportFromHead(h, ride.FoVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var tiles, orient, frames, sal bytes.Buffer
	if err := WriteTiles(&tiles, vp); err != nil {
		t.Fatal(err)
	}
	if err := WriteOrientation(&orient, h); err != nil {
		t.Fatal(err)
	}
	top := v.Levels - 1
	if err := WriteFrames(&frames, &sal, v, top); err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"u1/tile.csv": {Data: tiles.Bytes()}, "u1/orientation.csv": {Data: orient.Bytes()},
		"v/frames.csv": {Data: frames.Bytes()}, "v/saliency.csv": {Data: sal.Bytes()},
	}
	got, gotVP, err := Load(fsys, "gen", "v/frames.csv", "v/saliency.csv", "u1/tile.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i := range v.Types {
		if got.Types[i] != v.Types[i] || gotVP.View[i] != vp.View[i] {
			t.Fatalf("frame %d differs after the round trip", i)
		}
		for z := range v.Size[i] {
			if d := got.Size[i][z][0] - v.Size[i][z][top]; d < -1 || d > 1 {
				t.Fatalf("frame %d tile %d: %d bytes, wrote %d", i, z, got.Size[i][z][0], v.Size[i][z][top])
			}
		}
	}
	h2, err := ReadOrientation("orientation.csv", &orient)
	if err != nil {
		t.Fatal(err)
	}
	vp2, _ := ride.ViewportFromHead(h2, ride.FoVConfig{})
	same := 0
	for i := range vp.View {
		if vp2.View[i] == vp.View[i] {
			same++
		}
	}
	if same < len(vp.View)*95/100 { // angles are rounded to 1e-4°
		t.Errorf("orientation round trip: %d of %d viewports identical", same, len(vp.View))
	}
	// Without saliency the frame splits evenly.
	even, err := ReadVideo("e", "frames.csv", bytes.NewReader(frames.Bytes()), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := even.Size[0][0][0], even.Size[0][199][0]; a != b {
		t.Errorf("without saliency tiles 1 and 200 have %d and %d bytes", a, b)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, file, data, want string
	}{
		{"tile missing frame", "tile.csv", TileHeader + "\n1,1,2\n2,3\n4,5\n", "tile.csv:4: frame 4 follows frame 2: frame 3 is missing"},
		{"tile out of range", "tile.csv", TileHeader + "\n1,1,201\n", "tile.csv:2: tile \"201\""},
		{"tile zero", "tile.csv", TileHeader + "\n0,0\n", "tile.csv:2: tile \"0\""},
		{"tile header", "tile.csv", "frame,tiles\n1,1\n", "tile.csv:1: header"},
		{"tile empty", "tile.csv", "", "tile.csv: empty file"},
		{"tile no frames", "tile.csv", TileHeader + "\n", "tile.csv: no frames"},
		{"tile first frame", "tile.csv", TileHeader + "\n5,1\n", "tile.csv:2: first frame is 5"},
		{"tile frame not int", "tile.csv", TileHeader + "\nx,1\n", "tile.csv:2: frame number \"x\""},
		{"frames negative size", "frames.csv", FramesHeader + "\n1,I,50000\n2,B,-300\n", "frames.csv:3: frame size -300 bytes"},
		{"frames bad type", "frames.csv", FramesHeader + "\n1,I,50000\n2,X,300\n", "frames.csv:3: frame type \"X\""},
		{"frames starts with P", "frames.csv", FramesHeader + "\n1,P,50000\n", "frames.csv:2: the first frame is P"},
		{"frames missing frame", "frames.csv", FramesHeader + "\n0,I,50000\n2,B,5000\n", "frames.csv:3: frame 2 follows frame 0: frame 1 is missing"},
		{"frames field count", "frames.csv", FramesHeader + "\n1,I\n", "frames.csv:2: 1 fields"},
		{"orientation bad number", "orientation.csv", OrientationHeader + "\n1,0,0,1,NaN,0,0\n", "orientation.csv:2: field 5"},
		{"orientation pitch", "orientation.csv", OrientationHeader + "\n1,0,0,1,0,95,0\n", "orientation.csv:2: yaw 0 / pitch 95"},
		{"orientation fields", "orientation.csv", OrientationHeader + "\n1,0,0\n", "orientation.csv:2: 2 fields"},
		{"csv quote", "tile.csv", TileHeader + "\n1,\"2\n", "tile.csv:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			r := strings.NewReader(tc.data)
			switch tc.file {
			case "tile.csv":
				_, err = ReadTiles(tc.file, r)
			case "frames.csv":
				_, err = ReadVideo("v", tc.file, r, "", nil)
			case "orientation.csv":
				_, err = ReadOrientation(tc.file, r)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	frames := FramesHeader + "\n1,I,50000\n2,B,5000\n"
	for _, tc := range []struct{ name, sal, want string }{
		{"saliency negative", saliencyHeader() + "\n1," + strings.Repeat("1,", 199) + "-1\n2," + strings.Repeat("1,", 199) + "1\n", "saliency.csv:2: tile 200 saliency \"-1\""},
		{"saliency short row", saliencyHeader() + "\n1,1,2\n", "saliency.csv:2: 2 saliency values"},
		{"saliency missing frame", saliencyHeader() + "\n1," + strings.Repeat("1,", 199) + "1\n", "saliency.csv: 1 frames, but frames.csv has 2"},
		{"saliency zero", saliencyHeader() + "\n1," + strings.Repeat("0,", 199) + "0\n", "saliency.csv:2: all saliency values are 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadVideo("v", "frames.csv", strings.NewReader(frames), "saliency.csv", strings.NewReader(tc.sal))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, _, err := Load(fstest.MapFS{}, "v", "nope/frames.csv", "", "t.csv"); err == nil || !strings.Contains(err.Error(), "nope/frames.csv") {
		t.Errorf("missing file: err = %v", err)
	}
}

func FuzzReadTiles(f *testing.F) {
	f.Add([]byte(TileHeader + "\n1,1,2,3\n2,4\n"))
	f.Add([]byte(TileHeader + "\n0\n1,200\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vp, err := ReadTiles("f", bytes.NewReader(data))
		if err == nil && len(vp.View) == 0 {
			t.Fatal("no error and no frames")
		}
	})
}

func FuzzReadVideo(f *testing.F) {
	f.Add([]byte(FramesHeader+"\n1,I,50000\n2,B,300\n3,P,2000\n"), []byte(""))
	f.Add([]byte(FramesHeader+"\n0,I,50000\n"), []byte(saliencyHeader()+"\n0,"+strings.Repeat("1,", 199)+"1\n"))
	f.Fuzz(func(t *testing.T, frames, sal []byte) {
		var s *bytes.Reader
		if len(sal) > 0 {
			s = bytes.NewReader(sal)
		}
		var v *ride.Video
		var err error
		if s != nil {
			v, err = ReadVideo("v", "frames.csv", bytes.NewReader(frames), "saliency.csv", s)
		} else {
			v, err = ReadVideo("v", "frames.csv", bytes.NewReader(frames), "", nil)
		}
		if err == nil {
			if verr := v.Validate(); verr != nil {
				t.Fatalf("loaded an invalid video: %v", verr)
			}
		}
	})
}

func FuzzReadOrientation(f *testing.F) {
	f.Add([]byte(OrientationHeader + "\n1,0,0,1,10,5,0\n2,0,0,1,-170,-5,0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadOrientation("o", bytes.NewReader(data))
		if err == nil && (len(h.Yaw) == 0 || len(h.Yaw) != len(h.Pitch)) {
			t.Fatal("inconsistent trace without an error")
		}
	})
}
