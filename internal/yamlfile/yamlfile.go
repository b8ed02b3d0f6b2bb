// Package yamlfile decodes hetquic's YAML inputs strictly and turns the YAML
// library's multi-line errors into the one-line "file:line: problem" form that
// every hetquic command prints for bad input.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Decode decodes data into v, rejecting unknown fields, and names the file in
// any error. Only the first problem is reported: fixing one at a time keeps the
// message to one line, which is what a person at a terminal reads.
func Decode(name string, data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: empty document", name)
	}
	if err != nil {
		return fmt.Errorf("%s%s", name, oneLine(err))
	}
	return nil
}

// DecodeNode strictly decodes one YAML node into v. yaml's Node.Decode ignores
// KnownFields, so the node is re-encoded and decoded by a strict decoder.
func DecodeNode(name string, n *yaml.Node, v any) error {
	data, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		// Line numbers of the re-encoded text would mislead; report the
		// node's own line instead.
		msg := tidy(lineRE.ReplaceAllString(firstError(err), ""))
		return fmt.Errorf("%s:%d: %s", name, n.Line, msg)
	}
	return nil
}

var lineRE = regexp.MustCompile(`^(yaml: )?line \d+: `)

// parserErrorRE matches the YAML parser's (not its scanner's) problems.
var parserErrorRE = regexp.MustCompile(`^(did not find expected |found duplicate %|found incompatible YAML document|found undefined tag handle)`)

// oneLine renders err as ":LINE: problem" (or ": problem" without a line).
func oneLine(err error) string {
	msg := strings.TrimPrefix(firstError(err), "yaml: ")
	if m := regexp.MustCompile(`^line (\d+): (.*)$`).FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserErrorRE.MatchString(m[2]) {
			// The library counts a parser error's line from 0 (its
			// scanner errors it corrects to 1-based): an unclosed [ was
			// reported on the line before it.
			line++
		}
		return ":" + strconv.Itoa(line) + ": " + tidy(m[2])
	}
	return ": " + tidy(msg)
}

func firstError(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		// A quoted value may hold a newline; the message stays one line.
		return strings.ReplaceAll(te.Errors[0], "\n", `\n`)
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}

var notFoundRE = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

// tidy rewrites the YAML library's Go-centric phrasing into the terms of the file.
func tidy(msg string) string {
	if m := notFoundRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown field %q", m[1])
	}
	return msg
}
