package ride

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Viewport is the FoV indicator matrix v of §5.3.1: View[i][z] is true
// when tile z of frame i is inside the user's field of view.
type Viewport struct {
	View [][Tiles]bool
}

// Count is the number of viewed tiles of frame i.
func (vp *Viewport) Count(i int) int {
	n := 0
	for _, b := range vp.View[i] {
		if b {
			n++
		}
	}
	return n
}

// FoVConfig parameterises the head-movement model.
type FoVConfig struct {
	// WidthTiles and HeightTiles are the viewport's extent in tiles
	// (default 7 × 4.5, i.e. 126° × 81° of an equirectangular 360°×180°
	// frame, an HMD's field of view): a viewport overlaps 7–8 columns and
	// 5–6 rows, about 40 tiles, as in §5.5.1's "approximately 40 tiles".
	WidthTiles, HeightTiles float64
	// SwitchProb is the chance per frame that the user turns to another
	// region (default 1/45: a turn every 1.5 s on average).
	SwitchProb float64
	// BackProb is the chance that a turn goes back to the previous region
	// (default 0.5): Fig. 5.5's viewpoint switches back and forth.
	BackProb float64
	// TurnFrames is how many frames a turn takes (default 6, 200 ms: a fast
	// head turn of ~90° at ~450°/s).
	TurnFrames int
}

func (c *FoVConfig) defaults() {
	if c.WidthTiles == 0 {
		c.WidthTiles = 7
	}
	if c.HeightTiles == 0 {
		c.HeightTiles = 4.5
	}
	if c.SwitchProb == 0 {
		c.SwitchProb = 1.0 / 45
	}
	if c.BackProb == 0 {
		c.BackProb = 0.5
	}
	if c.TurnFrames == 0 {
		c.TurnFrames = 6
	}
}

// HeadTrace is a head orientation per frame in degrees: yaw in [-180,
// 180), pitch in [-90, 90] (the dataset's orientation.csv carries the same
// angles).
type HeadTrace struct {
	Yaw, Pitch []float64
}

// GenerateHead draws a head-movement trace of n frames: slow drift (an
// AR(1) velocity) around a region of interest, and now and then a fast
// turn to a new region or back to the previous one (Fig. 5.5).
func GenerateHead(n int, cfg FoVConfig, rng *rand.Rand) HeadTrace {
	cfg.defaults()
	h := HeadTrace{Yaw: make([]float64, n), Pitch: make([]float64, n)}
	yaw, pitch := rng.Float64()*360-180, rng.NormFloat64()*10
	prevYaw, prevPitch := yaw+90, pitch
	var vy, vp float64
	turn, turnLeft := [2]float64{}, 0
	for i := 0; i < n; i++ {
		switch {
		case turnLeft > 0:
			yaw += turn[0]
			pitch += turn[1]
			turnLeft--
		case rng.Float64() < cfg.SwitchProb:
			ty, tp := rng.Float64()*360-180, rng.NormFloat64()*20
			if rng.Float64() < cfg.BackProb {
				ty, tp = prevYaw, prevPitch
			}
			prevYaw, prevPitch = yaw, pitch
			dy := math.Mod(ty-yaw+540, 360) - 180 // shortest way round
			turn = [2]float64{dy / float64(cfg.TurnFrames), (tp - pitch) / float64(cfg.TurnFrames)}
			turnLeft = cfg.TurnFrames
		default: // drift: a few degrees per second
			vy = 0.95*vy + 0.3*rng.NormFloat64()
			vp = 0.95*vp + 0.15*rng.NormFloat64() - 0.01*pitch
			yaw += vy
			pitch += vp
		}
		yaw = math.Mod(yaw+540, 360) - 180
		pitch = math.Max(-80, math.Min(80, pitch))
		h.Yaw[i], h.Pitch[i] = yaw, pitch
	}
	return h
}

// ViewportFromHead maps each frame's orientation to the tiles the viewport
// overlaps (equirectangular: column 0 starts at yaw −180°, row 0 at pitch
// +90°).
func ViewportFromHead(h HeadTrace, cfg FoVConfig) (*Viewport, error) {
	cfg.defaults()
	if len(h.Yaw) != len(h.Pitch) {
		return nil, fmt.Errorf("head trace: %d yaw and %d pitch samples", len(h.Yaw), len(h.Pitch))
	}
	vp := &Viewport{View: make([][Tiles]bool, len(h.Yaw))}
	const degPerCol, degPerRow = 360.0 / Cols, 180.0 / Rows
	for i := range h.Yaw {
		cx := (h.Yaw[i] + 180) / degPerCol
		cy := (90 - h.Pitch[i]) / degPerRow
		c0, c1 := int(math.Floor(cx-cfg.WidthTiles/2)), int(math.Ceil(cx+cfg.WidthTiles/2))
		r0, r1 := int(math.Floor(cy-cfg.HeightTiles/2)), int(math.Ceil(cy+cfg.HeightTiles/2))
		r0, r1 = max(r0, 0), min(r1, Rows)
		for r := r0; r < r1; r++ {
			for c := c0; c < c1; c++ {
				vp.View[i][r*Cols+((c%Cols)+Cols)%Cols] = true
			}
		}
	}
	return vp, nil
}
