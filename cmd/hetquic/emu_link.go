package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// A file-less emulator (hetquic emu relay --delay 20ms --rate 10mbit, in the
// spirit of mahimahi's mm-delay 20): the link flags describe every path, and
// --link NAME:delay=…,rate=…,… one path each, over them.

// linkFlags are emu relay's shorthand for one link, in both directions.
type linkFlags struct {
	delay, jitter, rate, loss, queue string
}

// set is the shorthand as a link spec ("" when no flag was given).
func (f linkFlags) spec() string {
	var parts []string
	for _, kv := range [][2]string{{"delay", f.delay}, {"jitter", f.jitter}, {"rate", f.rate}, {"loss", f.loss}, {"queue", f.queue}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

// inlineScenario is the scenario of n paths that the link flags and the
// --link specs describe: each --link is one path (the flags its defaults);
// without one, every one of the n paths is the flags' link.
func inlineScenario(f linkFlags, links []string, n int) (*scenario.Scenario, error) {
	base, _, err := parseLinkSpec(f.spec(), scenario.Link{})
	if err != nil {
		return nil, fmt.Errorf("--%w", err) // the key is the flag's name
	}
	s := &scenario.Scenario{Name: "cli", Description: "emu relay's link flags"}
	if len(links) == 0 {
		for i := range n {
			s.Paths = append(s.Paths, scenario.Path{Name: fmt.Sprintf("p%d", i+1), Up: base, Down: base})
		}
	}
	for i, spec := range links {
		name := fmt.Sprintf("p%d", i+1)
		if before, after, ok := strings.Cut(spec, ":"); ok && !strings.Contains(before, "=") {
			name, spec = before, after
		}
		l, _, err := parseLinkSpec(spec, base)
		if err != nil {
			return nil, fmt.Errorf("--link %s: %w", links[i], err)
		}
		s.Paths = append(s.Paths, scenario.Path{Name: name, Up: l, Down: l})
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseLinkSpec reads "delay=20ms,rate=10mbit,loss=1%,queue=100,jitter=2ms"
// over base (a key not given keeps base's value). Delays are Go durations
// or milliseconds; rates kbit, mbit or gbit (tc's units; a bare number is
// Mbit/s); loss a percentage or a fraction; queue packets. It returns the
// keys it set.
func parseLinkSpec(spec string, base scenario.Link) (scenario.Link, []string, error) {
	l := base
	var keys []string
	if strings.TrimSpace(spec) == "" {
		return l, nil, nil
	}
	for kv := range strings.SplitSeq(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return l, nil, fmt.Errorf("%q is not KEY=VALUE (delay, jitter, rate, loss, queue)", kv)
		}
		var err error
		switch k {
		case "delay":
			l.DelayMs, err = parseMs(v)
		case "jitter":
			l.JitterMs, err = parseMs(v)
		case "rate":
			l.RateMbps, err = parseRate(v)
		case "loss":
			l.Loss, err = parseLoss(v)
		case "queue":
			l.QueuePackets, err = strconv.Atoi(v)
			if err != nil || l.QueuePackets < 1 {
				err = fmt.Errorf("%q is not a number of packets ≥ 1", v)
			}
		default:
			return l, nil, fmt.Errorf("unknown key %q (delay, jitter, rate, loss, queue)", k)
		}
		if err != nil {
			return l, nil, fmt.Errorf("%s: %w", k, err)
		}
		keys = append(keys, k)
	}
	return l, keys, nil
}

// parseMs is a duration (20ms, 1.5s) or a number of milliseconds, ≥ 0.
func parseMs(v string) (float64, error) {
	if ms, err := strconv.ParseFloat(v, 64); err == nil {
		if ms < 0 || ms > maxLinkDelayMs {
			return 0, fmt.Errorf("%q is outside [0, %d] ms", v, maxLinkDelayMs)
		}
		return ms, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxLinkDelayMs*time.Millisecond {
		return 0, fmt.Errorf("%q is not a duration in [0, %d ms] (20ms, 1.5s)", v, maxLinkDelayMs)
	}
	return float64(d) / float64(time.Millisecond), nil
}

// maxLinkDelayMs bounds a delay: a minute one way is past any network the
// emulator models and catches a unit typo (20s for 20ms).
const maxLinkDelayMs = 60_000

// rateUnits are tc's rate units in Mbit/s; "mbps" is not among them
// because tc reads it as megabytes per second.
var rateUnits = map[string]float64{"kbit": 1e-3, "mbit": 1, "gbit": 1e3}

// parseRate is a rate with a unit of rateUnits, or a number of Mbit/s.
func parseRate(v string) (float64, error) {
	num, unit := v, "mbit"
	if i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = v[:i], strings.ToLower(v[i:])
	}
	scale, ok := rateUnits[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unit %q is not kbit, mbit or gbit (as tc writes them; a bare number is Mbit/s)", v, unit)
	}
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || x <= 0 || x*scale > 1e6 {
		return 0, fmt.Errorf("%q is not a rate above 0 and up to 1000 gbit", v)
	}
	return x * scale, nil
}

// parseLoss is a percentage (1%) or a fraction (0.01) in [0, 1].
func parseLoss(v string) (float64, error) {
	num, pct := strings.CutSuffix(v, "%")
	x, err := strconv.ParseFloat(num, 64)
	if pct {
		x /= 100
	}
	if err != nil || !(x >= 0 && x <= 1) {
		return 0, fmt.Errorf("%q is not a loss between 0 and 100%%", v)
	}
	return x, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
