// Package docgen keeps the numbers in hetquic's Markdown docs written by the
// commands that measure them.
//
// A generated block is the text between an opening marker naming a command
// and a closing marker:
//
//	<!-- gen: hetquic exp run pcm-table5 --md -->
//	...what the command printed on stdout...
//	<!-- /gen -->
//
// Regenerating a doc re-runs each block's command and replaces the block's
// text with its output; a check does the same without writing and reports
// every block whose text differs (the doc is stale). Blocks opened with
// "<!-- gen measured: COMMAND -->" hold timings or real-network numbers that
// cannot be reproduced bit for bit: they are regenerated only on request,
// and otherwise only checked to state their date, command and machine load.
// Markers inside fenced code blocks are text, not markers, so a doc can
// show the syntax.
package docgen

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Block is one generated block of a doc.
type Block struct {
	Line     int      // 1-based line of the opening marker
	Command  string   // as written in the marker: "hetquic exp run pcm-table5 --md"
	Args     []string // Command split into words (quotes honoured)
	Measured bool
	Body     string // the text between the markers, each line ending in \n

	start, end int // byte offsets of Body in the doc
}

const closeMarker = "<!-- /gen -->"

var openRE = regexp.MustCompile(`^<!-- gen( measured)?: (.+?) -->$`)

// Parse finds the generated blocks of doc. name is used in errors.
func Parse(name, doc string) ([]Block, error) {
	var blocks []Block
	var cur *Block
	fence := ""
	off := 0
	for i, line := range strings.SplitAfter(doc, "\n") {
		n := i + 1
		lineStart := off
		off += len(line)
		t := strings.TrimSpace(line)
		if f := fenceOf(t); f != "" && cur == nil {
			switch {
			case fence == "":
				fence = f
			case f[0] == fence[0] && len(f) >= len(fence) && f == t: // a closing fence has no info string
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := openRE.FindStringSubmatch(t); m != nil {
			if cur != nil {
				return nil, fmt.Errorf("%s:%d: gen block opened inside the block of line %d", name, n, cur.Line)
			}
			args, err := splitWords(m[2])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", name, n, err)
			}
			cur = &Block{Line: n, Command: m[2], Args: args, Measured: m[1] != "", start: off}
			continue
		}
		if strings.HasPrefix(t, "<!-- gen") {
			return nil, fmt.Errorf("%s:%d: malformed gen marker %q (want <!-- gen: hetquic ARGS --> or <!-- gen measured: COMMAND -->)", name, n, t)
		}
		if t == closeMarker {
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: %s without an opening marker", name, n, closeMarker)
			}
			cur.end = lineStart
			cur.Body = doc[cur.start:cur.end]
			blocks = append(blocks, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: gen block is never closed (%s)", name, cur.Line, closeMarker)
	}
	return blocks, nil
}

// fenceOf returns the code fence (three or more ` or ~) a line starts with.
func fenceOf(t string) string {
	for _, c := range "`~" {
		run := len(t) - len(strings.TrimLeft(t, string(c)))
		if run >= 3 {
			return t[:run]
		}
	}
	return ""
}

// splitWords splits a command line into words; single and double quotes
// group words, as in a shell (no escapes, no variables).
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// Runner runs one block's command and returns what it printed on stdout.
type Runner func(ctx context.Context, b Block) (string, error)

// Options say what Update does.
type Options struct {
	Run Runner
	// Measured also regenerates measured blocks; Stamp then returns the
	// line that states their date, command and load.
	Measured bool
	Stamp    func(b Block) string
	// Match, when set, limits Update to the blocks whose command contains
	// it; the others are left as they are, unchecked.
	Match string
}

// Stale is one block whose text is not what its command prints now.
type Stale struct {
	Line    int
	Command string
	Reason  string // "differs from the command's output", "has no date", …
}

// Update regenerates the blocks of doc and returns the new doc and the blocks
// that were stale (for a check: the new doc is not written). A command that
// fails is an error naming the file and line.
func Update(ctx context.Context, name, doc string, o Options) (string, []Stale, error) {
	blocks, err := Parse(name, doc)
	if err != nil {
		return "", nil, err
	}
	var out strings.Builder
	var stale []Stale
	prev := 0
	for _, b := range blocks {
		out.WriteString(doc[prev:b.start])
		prev = b.end
		if o.Match != "" && !strings.Contains(b.Command, o.Match) {
			out.WriteString(b.Body)
			continue
		}
		if b.Measured && !o.Measured {
			out.WriteString(b.Body)
			if reason := checkMeasured(b); reason != "" {
				stale = append(stale, Stale{b.Line, b.Command, reason})
			}
			continue
		}
		var stamp string
		if b.Measured {
			stamp = o.Stamp(b) // before the run: the load it starts under
		}
		text, err := o.Run(ctx, b)
		if err != nil {
			return "", nil, fmt.Errorf("%s:%d: %s: %w", name, b.Line, b.Command, err)
		}
		if b.Measured {
			text = stamp + "\n\n" + text
		}
		text = normalize(text)
		out.WriteString(text)
		if text != b.Body {
			stale = append(stale, Stale{b.Line, b.Command, "differs from the command's output"})
		}
	}
	out.WriteString(doc[prev:])
	return out.String(), stale, nil
}

// normalize makes a command's output a block body: no trailing spaces, and
// one newline at the end so the closing marker sits on its own line. The
// blank lines around it are kept: Markdown needs one between a table and
// the marker comment that follows it.
func normalize(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

var (
	dateRE = regexp.MustCompile(`\b20\d\d-[01]\d-[0-3]\d\b`)
	loadRE = regexp.MustCompile(`(?i)\bload\b`)
)

// checkMeasured says what a measured block fails to state, or "".
func checkMeasured(b Block) string {
	var missing []string
	if !dateRE.MatchString(b.Body) {
		missing = append(missing, "a date (YYYY-MM-DD)")
	}
	if !strings.Contains(b.Body, b.Command) {
		missing = append(missing, "its command ("+b.Command+")")
	}
	if !loadRE.MatchString(b.Body) {
		missing = append(missing, "the machine's load (uptime)")
	}
	if len(missing) == 0 {
		return ""
	}
	return "measured block does not state " + strings.Join(missing, ", ")
}

// skipDirs are never searched for docs: outputs, test inputs, tools' caches.
var skipDirs = map[string]bool{"testdata": true, "results": true, "node_modules": true, "vendor": true}

// Find lists the Markdown files under root that may hold generated blocks,
// relative to root and sorted: every *.md outside hidden directories,
// testdata, results and vendored code.
func Find(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
