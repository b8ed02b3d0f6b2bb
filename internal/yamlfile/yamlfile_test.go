package yamlfile

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type doc struct {
	Name  string  `yaml:"name"`
	Delay float64 `yaml:"delay_ms"`
}

func TestDecodeErrorsAreOneLine(t *testing.T) {
	for text, want := range map[string]string{
		"name: a\ndelay: 5\n":       "f.yaml:2: unknown field \"delay\"",
		"name: a\ndelay_ms: five\n": "f.yaml:2: cannot unmarshal !!str `five` into float64",
		"":                          "f.yaml: empty document",
		"name: [\n":                 "f.yaml:",
		// The unclosed [ is on line 3: the parser's own count said 2.
		"name: a\ndelay_ms: 1\nx: [a\n": "f.yaml:3: did not find expected ',' or ']'",
	} {
		var d doc
		err := Decode("f.yaml", []byte(text), &d)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line starting %q", text, err, want)
		}
	}
	var d doc
	if err := Decode("f.yaml", []byte("name: a\ndelay_ms: 5\n"), &d); err != nil || d != (doc{"a", 5}) {
		t.Errorf("good document: %+v %v", d, err)
	}
}

func TestDecodeNodeIsStrict(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("x:\n  name: a\n  delai_ms: 3\n"), &n); err != nil {
		t.Fatal(err)
	}
	sub := n.Content[0].Content[1]
	var d doc
	err := DecodeNode("x", sub, &d)
	if err == nil || err.Error() != `x:2: unknown field "delai_ms"` {
		t.Errorf("got %v", err)
	}
}
