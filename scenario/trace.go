package scenario

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// RateTrace is a parsed mahimahi delivery trace: each entry is the time, in
// ms from the start of the trace, of one 1500-byte delivery opportunity.
// Entries are non-decreasing; several at the same ms give more bytes in that
// ms. The trace repeats with period PeriodMs (its last timestamp), as in
// mahimahi's link shell.
type RateTrace struct {
	Ms []uint64
}

// TraceOpportunityBytes is what one line of a mahimahi trace may deliver.
const TraceOpportunityBytes = 1500

// PeriodMs is the length of one cycle of the trace.
func (t RateTrace) PeriodMs() uint64 { return t.Ms[len(t.Ms)-1] }

// MeanMbps is the trace's long-run delivery rate.
func (t RateTrace) MeanMbps() float64 {
	return float64(len(t.Ms)) * TraceOpportunityBytes * 8 / float64(t.PeriodMs()) / 1e3
}

// ParseRateTrace reads a mahimahi trace: one integer ms timestamp per line,
// non-decreasing, the last one > 0. Blank lines and lines starting with #
// are skipped. name is used in errors.
func ParseRateTrace(name string, data []byte) (RateTrace, error) {
	var t RateTrace
	err := eachToken(data, func(line int, tok string) error {
		v, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			return fmt.Errorf("%s:%d: %q is not a whole number of ms", name, line, tok)
		}
		if n := len(t.Ms); n > 0 && v < t.Ms[n-1] {
			return fmt.Errorf("%s:%d: timestamp %d is before the previous one (%d)", name, line, v, t.Ms[n-1])
		}
		t.Ms = append(t.Ms, v)
		return nil
	})
	if err != nil {
		return RateTrace{}, err
	}
	if len(t.Ms) == 0 || t.PeriodMs() == 0 {
		return RateTrace{}, fmt.Errorf("%s: trace needs at least one timestamp > 0", name)
	}
	return t, nil
}

// ParseLossTrace reads a loss trace: tokens 0 (deliver) or 1 (drop), one per
// packet, separated by white space or newlines; # starts a comment line. The
// trace is cycled by the emulator.
func ParseLossTrace(name string, data []byte) ([]bool, error) {
	var drops []bool
	err := eachToken(data, func(line int, tok string) error {
		for _, f := range strings.Fields(tok) {
			switch f {
			case "0":
				drops = append(drops, false)
			case "1":
				drops = append(drops, true)
			default:
				return fmt.Errorf("%s:%d: %q is not 0 or 1", name, line, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(drops) == 0 {
		return nil, fmt.Errorf("%s: loss trace is empty", name)
	}
	return drops, nil
}

// eachToken calls f with every non-blank, non-comment line (trimmed).
func eachToken(data []byte, f func(line int, tok string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for line := 1; sc.Scan(); line++ {
		tok := strings.TrimSpace(sc.Text())
		if tok == "" || tok[0] == '#' {
			continue
		}
		if err := f(line, tok); err != nil {
			return err
		}
	}
	return sc.Err()
}

// checkTrace reads and parses one trace file. A name with a control
// character is refused before it is opened: the file system's error and the
// parser's both quote the name raw, and a load error is one line.
func (s *Scenario) checkTrace(field, name string, parse func(string, []byte) error) error {
	if strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("%s: %q: a file name with a control character", field, name)
	}
	data, err := s.ReadFile(name)
	if err != nil {
		return fmt.Errorf("%s: %v", field, err)
	}
	if err := parse(name, data); err != nil {
		return fmt.Errorf("%s: %v", field, err)
	}
	return nil
}

// checkTraces reads and parses every trace file the scenario names (in paths
// and in event patches), so a missing or broken trace is a load error.
func (s *Scenario) checkTraces() error {
	check := func(field string, l Link) error {
		if l.RateTrace != "" {
			if err := s.checkTrace(field+".rate_trace", l.RateTrace, func(n string, b []byte) error {
				_, err := ParseRateTrace(n, b)
				return err
			}); err != nil {
				return err
			}
		}
		if l.LossTrace != "" {
			return s.checkTrace(field+".loss_trace", l.LossTrace, func(n string, b []byte) error {
				_, err := ParseLossTrace(n, b)
				return err
			})
		}
		return nil
	}
	for i, p := range s.Paths {
		field := fmt.Sprintf("paths[%d]", i)
		if err := check(field+".up", p.Up); err != nil {
			return err
		}
		if err := check(field+".down", p.Down); err != nil {
			return err
		}
	}
	for i, e := range s.Events {
		if e.Set == nil {
			continue
		}
		p, err := e.Set.Apply(s.Paths[s.PathIndex(e.Path)])
		if err != nil {
			continue // Validate reported it
		}
		field := fmt.Sprintf("events[%d].set", i)
		if err := check(field+".up", p.Up); err != nil {
			return err
		}
		if err := check(field+".down", p.Down); err != nil {
			return err
		}
	}
	return nil
}
