package claims

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A metric path walks a decoded summary.json (objects, arrays, numbers):
//
//	strategies[label=hetquic].ratio_to_oracle   the element whose "label" is "hetquic"
//	summaries[0].goodput_mbps                   the first element
//	leo.handovers                               nested objects
//
// A selector [key=value] must match exactly one element: two matches are an
// error, so a claim never silently reads the wrong row. The path must end at
// a number.
type step struct {
	field      string // object key; "" for a step that only indexes
	index      int    // array index when sel is false and hasIndex
	hasIndex   bool
	sel        bool   // [key=value]
	key, value string // for sel
}

var stepRE = regexp.MustCompile(`^([A-Za-z0-9_]*)(?:\[([^\]]*)\])?$`)

func parsePath(p string) ([]step, error) {
	if p == "" {
		return nil, fmt.Errorf("empty path")
	}
	var steps []step
	// Split on dots outside brackets: a selector's value may hold dots.
	var parts []string
	depth, start := 0, 0
	for i, r := range p {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, p[start:])
	for _, part := range parts {
		m := stepRE.FindStringSubmatch(part)
		if m == nil || (m[1] == "" && !strings.HasPrefix(part, "[")) {
			return nil, fmt.Errorf("%q: bad step %q (want name, name[N] or name[key=value])", p, part)
		}
		s := step{field: m[1]}
		if strings.Contains(part, "[") {
			in := m[2]
			if k, v, ok := strings.Cut(in, "="); ok {
				if k == "" {
					return nil, fmt.Errorf("%q: selector %q has no key", p, in)
				}
				s.sel, s.key, s.value = true, k, v
			} else {
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("%q: index %q is not a number ≥ 0", p, in)
				}
				s.index, s.hasIndex = n, true
			}
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// Lookup returns the number at path p in v, a value decoded by
// encoding/json (map[string]any, []any, float64, json.Number).
func Lookup(v any, p string) (float64, error) {
	steps, err := parsePath(p)
	if err != nil {
		return math.NaN(), err
	}
	cur, at := v, ""
	for _, s := range steps {
		if s.field != "" {
			obj, ok := cur.(map[string]any)
			if !ok {
				return math.NaN(), fmt.Errorf("%s: %s is not an object", p, orRoot(at))
			}
			next, ok := obj[s.field]
			if !ok {
				return math.NaN(), fmt.Errorf("%s: no field %q in %s", p, s.field, orRoot(at))
			}
			cur, at = next, join(at, s.field)
		}
		if !s.sel && !s.hasIndex {
			continue
		}
		arr, ok := cur.([]any)
		if !ok {
			return math.NaN(), fmt.Errorf("%s: %s is not a list", p, orRoot(at))
		}
		if s.hasIndex {
			if s.index >= len(arr) {
				return math.NaN(), fmt.Errorf("%s: %s has %d elements, no [%d]", p, orRoot(at), len(arr), s.index)
			}
			cur, at = arr[s.index], fmt.Sprintf("%s[%d]", at, s.index)
			continue
		}
		var found []any
		for _, e := range arr {
			if obj, ok := e.(map[string]any); ok && scalarString(obj[s.key]) == s.value {
				found = append(found, e)
			}
		}
		switch len(found) {
		case 0:
			return math.NaN(), fmt.Errorf("%s: no element of %s with %s=%s", p, orRoot(at), s.key, s.value)
		case 1:
			cur, at = found[0], fmt.Sprintf("%s[%s=%s]", at, s.key, s.value)
		default:
			return math.NaN(), fmt.Errorf("%s: %d elements of %s with %s=%s, want one", p, len(found), orRoot(at), s.key, s.value)
		}
	}
	switch x := cur.(type) {
	case float64:
		return x, nil
	case json.Number:
		return x.Float64()
	case nil:
		return math.NaN(), fmt.Errorf("%s: null", p)
	default:
		return math.NaN(), fmt.Errorf("%s: %T is not a number", p, cur)
	}
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return "\x00" // matches no selector value
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func orRoot(at string) string {
	if at == "" {
		return "the summary"
	}
	return at
}
