package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hetquic/hetquic/internal/results"
)

// Summary is summary.json of a swept experiment of any mode
// (docs/results.md): the header, the mode's Info, the design, the swept
// fields and every point with the mode's per-point summary P. P and Info are
// structs whose JSON fields are written inline (after a point's id and
// assigns; after the header), so every mode's sweep summary is one type.
type Summary[P any] struct {
	results.Header
	// Info, when not nil, is a struct of fields that hold for every point
	// (mode video: its figure and duration).
	Info   any
	Design string
	Params []string // the swept fields
	Points []PointSummary[P]
}

// PointSummary is one point of a sweep: its ID and assignments and what the
// mode summarizes there.
type PointSummary[P any] struct {
	ID      string
	Assigns []Assign
	Data    P
}

// NewSummary is the summary of a sweep over points, with the mode's
// summary of point i from point(i).
func NewSummary[P any](h results.Header, info any, design string, points []Point, point func(i int) P) *Summary[P] {
	s := &Summary[P]{Header: h, Info: info, Design: design}
	for _, a := range points[0].Assigns {
		s.Params = append(s.Params, a.Key)
	}
	for i, p := range points {
		s.Points = append(s.Points, PointSummary[P]{ID: p.ID, Assigns: p.Assigns, Data: point(i)})
	}
	return s
}

// MarshalJSON writes the header's fields, Info's, then design, params and
// points.
func (s Summary[P]) MarshalJSON() ([]byte, error) {
	return inline(s.Header, s.Info, struct {
		Design string            `json:"design"`
		Params []string          `json:"params"`
		Points []PointSummary[P] `json:"points"`
	}{s.Design, s.Params, s.Points})
}

// MarshalJSON writes id and assigns, then the fields of Data.
func (p PointSummary[P]) MarshalJSON() ([]byte, error) {
	return inline(struct {
		ID      string   `json:"id"`
		Assigns []Assign `json:"assigns"`
	}{p.ID, p.Assigns}, p.Data)
}

// inline marshals each part (a struct, or nil for none) and joins their
// fields into one object, in order.
func inline(parts ...any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, part := range parts {
		if part == nil {
			continue
		}
		data, err := json.Marshal(part)
		if err != nil {
			return nil, err
		}
		data = bytes.TrimSpace(data)
		if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
			return nil, fmt.Errorf("sweep summary: %T is not a JSON object", part)
		}
		if fields := data[1 : len(data)-1]; len(fields) > 0 {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.Write(fields)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
