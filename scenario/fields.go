package scenario

import (
	"fmt"
	"strings"
)

// The backends that read scenarios. Each models the fields of FieldTable
// its own way: it honours a field, translates it into what it can model
// (documented in the table), or refuses a scenario that sets it with an
// error naming field and backend. None drops a field silently.
const (
	// BackendOffline is the offline TCT model (experiment modes offline;
	// trace mode reads no scenario).
	BackendOffline = "offline"
	// BackendReal is experiment mode real: the emulator, driven round by
	// round by the experiment.
	BackendReal = "real"
	// BackendEmulator is the emulator run in real time (hetquic emu, the
	// root lab).
	BackendEmulator = "emulator"
	// BackendAgent is the agent's §V experiments (agent/runner): the
	// emulator, with events the experiment itself drives.
	BackendAgent = "agent"
	// BackendSim is the packet-level simulator (sim/runner).
	BackendSim = "sim"
)

// Backends are the backends, in the table's column order.
var Backends = []string{BackendOffline, BackendReal, BackendEmulator, BackendAgent, BackendSim}

// Support is how a backend treats a field.
type Support int

// The kinds of support.
const (
	Honoured   Support = iota // modelled as the field says
	Translated                // mapped onto what the backend models; see the note
	Refused                   // a scenario that sets it is an error on this backend
)

func (s Support) String() string {
	return [...]string{"honoured", "translated", "error"}[s]
}

// Rule is one cell of the table.
type Rule struct {
	Support Support
	Note    string
}

// Field is one row: a scenario field (link fields apply to up and down)
// and each backend's rule; a backend missing from Rules honours it.
type Field struct {
	Name  string
	Rules map[string]Rule
}

// eventsByRound is the offline and real translation of timed events.
const eventsByRound = "applies from round ⌊at_s / seconds_per_round⌋ (a field of the experiment); without seconds_per_round, an error"

// FieldTable is every scenario field and how each backend treats it: the
// table in docs/scenario-fields.md (hetquic scenario fields --md). A test
// keeps it in step with the Link and Event types.
var FieldTable = []Field{
	{"delay_ms", nil},
	{"jitter_ms", map[string]Rule{BackendOffline: {Honoured, "standard deviation of each flight's round trip"}}},
	{"jitter_dist", map[string]Rule{BackendOffline: {Translated, "its mean enters the mean delay; the round trip's shape is the experiment's model.dist (lognormal or normal)"}}},
	{"reorder", map[string]Rule{BackendOffline: {Refused, "one request per round has no packet order"}}},
	{"loss", nil},
	{"gilbert_elliott", map[string]Rule{BackendOffline: {Translated, "its stationary mean loss (bursts are not modelled)"}}},
	{"loss_trace", map[string]Rule{BackendOffline: {Refused, "a per-packet drop sequence has no per-round equivalent"}}},
	{"rate_mbps", map[string]Rule{BackendOffline: {Translated, "down: serialisation 8·size/rate; up: not modelled (a request is one packet)"}}},
	{"rate_trace", map[string]Rule{BackendOffline: {Refused, "delivery opportunities over time have no per-round equivalent"}}},
	{"queue_packets", map[string]Rule{BackendOffline: {Translated, "no effect: one request per round never fills a queue (queueing needs load)"}}},
	{"queue_bytes", map[string]Rule{BackendOffline: {Translated, "no effect: one request per round never fills a queue (queueing needs load)"}}},
	{"events[].at_s, set", map[string]Rule{
		BackendOffline: {Translated, eventsByRound}, BackendReal: {Translated, eventsByRound + "; applied through the emulator's control API"},
		BackendAgent: {Refused, "the §V experiments time their own changes (outage's cut)"},
	}},
	{"events[].outage_s", map[string]Rule{
		BackendOffline: {Translated, "loss 1 both ways (every task times out) for ⌈outage_s / seconds_per_round⌉ rounds, then the path's loss before it; an error on a gilbert_elliott path"},
		BackendReal:    {Translated, "loss 1 both ways for ⌈outage_s / seconds_per_round⌉ rounds, then the path's loss before it; an error on a gilbert_elliott path"},
		BackendAgent:   {Refused, "the §V experiments time their own changes (outage's cut)"},
	}},
}

// RuleFor is backend's rule for field.
func RuleFor(field, backend string) Rule {
	for _, f := range FieldTable {
		if f.Name == field {
			return f.Rules[backend] // zero Rule: Honoured
		}
	}
	return Rule{Support: Refused, Note: "unknown field"}
}

// Use is a field a scenario sets, at its first place (paths[1].down.queue_packets).
type Use struct{ Field, At string }

// Uses lists the fields of FieldTable that s sets to a non-zero value, each
// once, at its first place, in table order.
func (s *Scenario) Uses() []Use {
	first := map[string]string{}
	note := func(field, at string) {
		if _, ok := first[field]; !ok {
			first[field] = at
		}
	}
	for i, p := range s.Paths {
		for _, d := range []struct {
			name string
			l    Link
		}{{"up", p.Up}, {"down", p.Down}} {
			at := func(f string) string { return fmt.Sprintf("paths[%d].%s.%s", i, d.name, f) }
			l := d.l
			for _, c := range []struct {
				field string
				set   bool
			}{
				{"delay_ms", l.DelayMs != 0}, {"jitter_ms", l.JitterMs != 0}, {"jitter_dist", l.JitterDist != ""},
				{"reorder", l.Reorder}, {"loss", l.Loss != 0}, {"gilbert_elliott", l.GilbertElliott != nil},
				{"loss_trace", l.LossTrace != ""}, {"rate_mbps", l.RateMbps != 0}, {"rate_trace", l.RateTrace != ""},
				{"queue_packets", l.QueuePackets != 0}, {"queue_bytes", l.QueueBytes != 0},
			} {
				if c.set {
					note(c.field, at(c.field))
				}
			}
		}
	}
	for i, e := range s.Events {
		if e.OutageS > 0 {
			note("events[].outage_s", fmt.Sprintf("events[%d].outage_s", i))
		} else {
			note("events[].at_s, set", fmt.Sprintf("events[%d].at_s", i))
		}
	}
	var out []Use
	for _, f := range FieldTable {
		if at, ok := first[f.Name]; ok {
			out = append(out, Use{f.Name, at})
		}
	}
	return out
}

// Check fails, naming the field's place and the backend, on the first field
// s sets that backend refuses.
func (s *Scenario) Check(backend string) error {
	for _, u := range s.Uses() {
		if r := RuleFor(u.Field, backend); r.Support == Refused {
			return fmt.Errorf("%s: the %s backend cannot model %s (%s); see docs/scenario-fields.md", u.At, backend, u.Field, r.Note)
		}
	}
	return nil
}

// FieldsMarkdown is the table of FieldTable in Markdown: a row per field,
// a column per backend, each cell "honoured", "translated: …" or
// "error: …".
func FieldsMarkdown() string {
	var b strings.Builder
	b.WriteString("| field | " + strings.Join(Backends, " | ") + " |\n|---|")
	b.WriteString(strings.Repeat("---|", len(Backends)) + "\n")
	for _, f := range FieldTable {
		b.WriteString("| `" + f.Name + "` |")
		for _, be := range Backends {
			r := f.Rules[be]
			cell := r.Support.String()
			if r.Note != "" && r.Support != Honoured {
				cell += ": " + r.Note
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
