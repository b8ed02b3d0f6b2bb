package experiment

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// WriteRounds writes rounds.csv: one line per round of every run, with
//
//	round, strategy, seed, path, size_bytes, tct_ms,
//	regret (cumulative pseudo-regret after the round), hit (1 on a best path).
func WriteRounds(path string, r *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	w.WriteString("round,strategy,seed,path,size_bytes,tct_ms,regret,hit\n")
	var b []byte
	for _, runs := range r.Runs {
		for _, run := range runs {
			for t := range run.Path {
				b = strconv.AppendInt(b[:0], int64(t), 10)
				b = append(b, ',')
				b = append(b, run.Label...)
				b = append(b, ',')
				b = strconv.AppendUint(b, run.Seed, 10)
				b = append(b, ',')
				b = append(b, r.Paths[run.Path[t]]...)
				b = append(b, ',')
				b = strconv.AppendInt(b, int64(run.Size[t]), 10)
				b = append(b, ',')
				b = strconv.AppendFloat(b, run.TCTms[t], 'f', 4, 64)
				b = append(b, ',')
				b = strconv.AppendFloat(b, run.Regret[t], 'f', 4, 64)
				if run.Hit[t] {
					b = append(b, ",1\n"...)
				} else {
					b = append(b, ",0\n"...)
				}
				w.Write(b)
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteSummary writes summary.json.
func WriteSummary(path string, s *Summary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// WriteAll writes rounds.csv, summary.json, the figures and report.md into
// dir, and returns the files written.
func WriteAll(dir string, r *Result, s *Summary) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, "rounds.csv"), filepath.Join(dir, "summary.json")}
	if err := WriteRounds(files[0], r); err != nil {
		return nil, fmt.Errorf("write rounds: %w", err)
	}
	if err := WriteSummary(files[1], s); err != nil {
		return nil, fmt.Errorf("write summary: %w", err)
	}
	figs, err := WriteFigures(dir, r)
	if err != nil {
		return nil, fmt.Errorf("write figures: %w", err)
	}
	report := filepath.Join(dir, "report.md")
	if err := WriteReport(report, r, s, figs); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	return append(append(files, figs...), report), nil
}
