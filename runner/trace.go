package runner

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// traceTable is a recorded experiment: one sample per path per round.
type traceTable struct {
	paths []string
	rows  [][]float64 // [round][path], ms
}

// parseTrace reads a trace CSV:
//
//	round,wifi,lte
//	0,12.1,40.3
//	1,11.8,38.9
//
// Rounds must be 0, 1, 2, … in order; every sample a finite number > 0.
func parseTrace(name string, data []byte) (*traceTable, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %v", name, err)
	}
	if len(header) < 2 || header[0] != "round" {
		return nil, fmt.Errorf("%s:1: header must be \"round\" followed by one column per path", name)
	}
	tr := &traceTable{paths: header[1:]}
	seen := map[string]bool{}
	for _, p := range tr.paths {
		if p == "" || seen[p] {
			return nil, fmt.Errorf("%s:1: path column %q is empty or repeated", name, p)
		}
		seen[p] = true
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		line, _ := r.FieldPos(0)
		if n, err := strconv.Atoi(rec[0]); err != nil || n != len(tr.rows) {
			return nil, fmt.Errorf("%s:%d: round %q, want %d", name, line, rec[0], len(tr.rows))
		}
		row := make([]float64, len(tr.paths))
		for i, f := range rec[1:] {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !finitePositive(v) {
				return nil, fmt.Errorf("%s:%d: %s: %q is not a sample > 0", name, line, tr.paths[i], f)
			}
			row[i] = v
		}
		tr.rows = append(tr.rows, row)
	}
	if len(tr.rows) == 0 {
		return nil, fmt.Errorf("%s: no rounds", name)
	}
	return tr, nil
}
