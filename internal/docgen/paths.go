package docgen

import (
	"path"
	"regexp"
	"strings"
)

// Missing is a file a doc names that is not there.
type Missing struct {
	Line   int    // 1-based line of the name
	Path   string // as written in the doc
	Reason string // "no such file" or "outside the repository"
}

// pathExtensions are the endings that make an inline code span a file name
// a reader is expected to open; a span such as `exp run` or `--md` is not one.
var pathExtensions = []string{".md", ".go", ".yaml", ".yml", ".sh", ".csv", ".py", ".cc", ".toml", ".json", ".txt", ".svg", ".png"}

var (
	// linkRE matches a Markdown link or image target: [text](target).
	linkRE = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	// codeRE matches an inline code span holding no space.
	codeRE = regexp.MustCompile("`([^`\\s]+)`")
	// placeholderRE matches a capitalised word in a path segment that
	// stands for any name (results/NAME/, runs/LABEL_goodput.csv): the doc
	// describes a pattern, not one file.
	placeholderRE = regexp.MustCompile(`(^|[^A-Za-z])[A-Z]{2,}([^A-Za-z]|$)`)
)

// runOutputDir is where runs write their results; a doc names files there
// (results/index.md) that exist only after a run, so they are not checked.
const runOutputDir = "results/"

// Paths lists the files doc names that exist neither relative to the doc
// (name is its path from the repository root) nor relative to the root,
// and those that lie outside the repository, which no check can follow.
// A name is a relative Markdown link's target, or an inline code span with
// a slash and a file extension that is not a pattern (placeholders,
// wildcards, braces) nor a run's output. Fenced code and generated blocks
// are skipped: commands' output is checked by running them. exists is
// asked with slash-separated paths relative to the repository root.
func Paths(name, doc string, exists func(string) bool) []Missing {
	dir := path.Dir(name)
	var missing []Missing
	for i, line := range proseLines(doc) {
		if line == "" {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, ":") {
				continue // an anchor in this doc, or a URL
			}
			if r := resolve(target, []string{dir}, exists); r != "" {
				missing = append(missing, Missing{Line: i + 1, Path: m[1], Reason: r})
			}
		}
		for _, m := range codeRE.FindAllStringSubmatch(line, -1) {
			if !namesFile(m[1]) {
				continue
			}
			if r := resolve(m[1], []string{dir, "."}, exists); r != "" {
				missing = append(missing, Missing{Line: i + 1, Path: m[1], Reason: r})
			}
		}
	}
	return missing
}

// proseLines returns doc's lines with those in fenced code and in generated
// blocks (markers included) blanked, so indexes stay line numbers - 1.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	fence, inGen := "", false
	for i, line := range lines {
		t := strings.TrimSpace(line)
		f := fenceOf(t)
		switch {
		case fence != "":
			if f != "" && f[0] == fence[0] && len(f) >= len(fence) && f == t {
				fence = ""
			}
			lines[i] = ""
		case f != "" && !inGen:
			fence = f
			lines[i] = ""
		case openRE.MatchString(t):
			inGen = true
			lines[i] = ""
		case t == closeMarker:
			inGen = false
			lines[i] = ""
		case inGen:
			lines[i] = ""
		}
	}
	return lines
}

// namesFile reports whether an inline code span is one file's path.
func namesFile(s string) bool {
	if !strings.Contains(s, "/") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") ||
		strings.HasPrefix(s, runOutputDir) || strings.ContainsAny(s, "*?[]{}<>$…|=:") {
		return false
	}
	ext := false
	for _, e := range pathExtensions {
		ext = ext || strings.HasSuffix(s, e)
	}
	if !ext {
		return false
	}
	segs := strings.Split(s, "/")
	for i, seg := range segs {
		if i == len(segs)-1 && strings.HasSuffix(seg, ".md") {
			break // README.md, DESIGN.md: docs are named in capitals
		}
		if placeholderRE.MatchString(strings.TrimSuffix(seg, path.Ext(seg))) {
			return false
		}
	}
	return true
}

// resolve returns "" when p exists relative to one of the bases, else why
// not: outside the repository, or no such file.
func resolve(p string, bases []string, exists func(string) bool) string {
	outside := true
	for _, base := range bases {
		full := path.Clean(path.Join(base, p))
		if full == ".." || strings.HasPrefix(full, "../") {
			continue
		}
		outside = false
		if exists(full) {
			return ""
		}
	}
	if outside {
		return "outside the repository"
	}
	return "no such file"
}
