package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/docgen"
)

func init() {
	register(command{name: "docs", summary: "regenerate (or --check) the numbers commands write into the Markdown docs", run: runDocs})
}

const docsHelp = `Finds the generated blocks of the Markdown docs — the text between
"<!-- gen: hetquic ARGS -->" and "<!-- /gen -->" — runs each block's hetquic
command in this process and writes what it printed on stdout into the block.
With no FILE, every *.md of the repository is searched (run it from the
repository root; "go generate" does).

--check rewrites nothing: it lists each stale block as FILE:LINE and exits 1
(CI runs it). Blocks opened with "<!-- gen measured: COMMAND -->" (timings,
real networks) are not regenerated unless --measured is given; otherwise
they are only checked to state their date, command and machine load.
COMMAND of a measured block may be any shell command; it runs in the
current directory, and the block gets a line with the date, the command
and the load average before its output.

Both modes also check the files each doc names — relative Markdown links,
and paths with an extension in inline code, from the doc's directory or the
repository root — and fail on one that does not exist or lies outside the
repository (results/… and patterns such as NAME are not checked).`

func runDocs(ctx context.Context, args []string) error {
	fs := newFlagSet("docs", "docs [--check] [--measured] [--match TEXT] [FILE…]", docsHelp)
	check := fs.Bool("check", false, "change nothing; list stale blocks and exit 1 if any")
	measured := fs.Bool("measured", false, "also re-measure the measured blocks (slow; timings depend on the machine)")
	match := fs.String("match", "", "only the blocks whose command contains this text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = docgen.Find("."); err != nil {
			return err
		}
	}
	opts := docgen.Options{Run: memoRun(runDocCommand), Measured: *measured, Stamp: measuredStamp, Match: *match}
	var problems, failed, missing []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return badInput(err)
		}
		out, stale, err := docgen.Update(ctx, file, string(data), opts)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// Go on with the other files; the failure is reported at the end.
			failed = append(failed, err.Error())
			continue
		}
		for _, s := range stale {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, s.Line, s.Command, s.Reason))
		}
		for _, m := range docgen.Paths(filepath.ToSlash(file), out, docPathExists) {
			missing = append(missing, fmt.Sprintf("%s:%d: %s: %s", file, m.Line, m.Path, m.Reason))
		}
		if !*check && out != string(data) {
			if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
				return err
			}
			fmt.Printf("%s: regenerated\n", file)
		}
	}
	return docsVerdict(*check, failed, missing, problems)
}

// docsVerdict reports what a docs run found, worst first: failing
// commands, names of files that are not there, stale blocks (with --check),
// measured blocks that do not say when, how and under what load.
func docsVerdict(check bool, failed, missing, problems []string) error {
	if len(failed) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(failed, "\n"))
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		return fmt.Errorf("docs: %d files with a failing command", len(failed))
	}
	if len(missing) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(missing, "\n"))
		return fmt.Errorf("docs: %d file names that are not in the repository", len(missing))
	}
	if check && len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		return fmt.Errorf("docs: %d stale generated blocks (run hetquic docs)", len(problems))
	}
	if !check {
		// Rewriting fixes every block but a measured one that does not say
		// when, how and under what load it was measured.
		var bad []string
		for _, p := range problems {
			if strings.Contains(p, "measured block") {
				bad = append(bad, p)
			}
		}
		if len(bad) > 0 {
			fmt.Fprintln(os.Stderr, strings.Join(bad, "\n"))
			return fmt.Errorf("docs: %d measured blocks lack date, command or load", len(bad))
		}
	}
	return nil
}

// slowBlock is how long a block's command runs before docs names it and
// its time on stderr, so that a CI log shows where the docs check spends.
const slowBlock = 5 * time.Second

// memoRun runs each generated block's command once per docs run: a
// deterministic command prints the same whichever block asks, and some
// docs quote one table in several places (exp run pcm-table5). Measured
// blocks run every time; their output is a new measurement.
func memoRun(run func(context.Context, docgen.Block) (string, error)) func(context.Context, docgen.Block) (string, error) {
	seen := map[string]string{}
	return func(ctx context.Context, b docgen.Block) (string, error) {
		if out, ok := seen[b.Command]; ok && !b.Measured {
			return out, nil
		}
		start := time.Now()
		out, err := run(ctx, b)
		if took := time.Since(start); took >= slowBlock {
			fmt.Fprintf(os.Stderr, "docs: %s took %.0f s\n", b.Command, took.Seconds())
		}
		if err == nil && !b.Measured {
			seen[b.Command] = out
		}
		return out, err
	}
}

// docPathExists reports whether a slash-separated path names a file or
// directory (the docs' file check).
func docPathExists(p string) bool {
	_, err := os.Stat(filepath.FromSlash(p))
	return err == nil
}

// runDocCommand runs a block's command: a hetquic command through the CLI's
// own dispatch, in this process, capturing its stdout; a measured block's
// other commands through bash.
// markdownTableRE matches a Markdown table's separator row, which no plain
// text output (go test, /usr/bin/time) has.
var markdownTableRE = regexp.MustCompile(`(?m)^\|( *:?-+:? *\|)+ *$`)

func runDocCommand(ctx context.Context, b docgen.Block) (string, error) {
	if b.Args[0] != "hetquic" {
		if !b.Measured {
			return "", badInput(errors.New("a generated block's command must be a hetquic command (others only in measured blocks)"))
		}
		var out, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "bash", "-c", b.Command)
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%v: %s", err, lastLine(stderr.String()))
		}
		// A shell command prints text, whose lines are kept as they are,
		// unless what it prints holds a Markdown table (a hetquic command
		// run under chrt, a bench script that prints tables).
		if markdownTableRE.Match(out.Bytes()) {
			return out.String(), nil
		}
		return "```text\n" + strings.TrimRight(out.String(), "\n") + "\n```\n", nil
	}
	if len(b.Args) > 1 && b.Args[1] == "docs" {
		return "", badInput(errors.New("a generated block cannot run hetquic docs"))
	}
	return captureOutput(func() error { return dispatch(ctx, docsArgs(b.Args[1:], runtime.NumCPU())) })
}

// docsArgs is a generated block's hetquic command as docs runs it: a
// reproduce without --workers gets one worker per core. Left to itself,
// reproduce takes the cores the load average leaves free, and the load
// just before a docs run is mostly the runs docs itself made (CI's test
// command, the previous block): on 2 cores it ran its experiments one at
// a time. Its results do not depend on the number of workers.
func docsArgs(args []string, cores int) []string {
	if len(args) == 0 || args[0] != "reproduce" || slices.ContainsFunc(args, isWorkersFlag) {
		return args
	}
	return append(slices.Clip(args), "--workers", strconv.Itoa(cores))
}

func isWorkersFlag(a string) bool {
	return a == "--workers" || a == "-workers" || strings.HasPrefix(a, "--workers=") || strings.HasPrefix(a, "-workers=")
}

// captureOutput runs fn with os.Stdout redirected into the returned string
// and os.Stderr (progress lines) into the error when fn fails. Calls nest
// (a doc block runs "reproduce", which captures "exp run"): each restores
// what it found. It is not safe for concurrent use; the CLI runs one
// command at a time.
func captureOutput(fn func() error) (string, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return "", err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return "", err
	}
	read := func(r *os.File, into *bytes.Buffer, done chan<- struct{}) {
		_, _ = io.Copy(into, r)
		r.Close()
		close(done)
	}
	var stdout, stderr bytes.Buffer
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go read(outR, &stdout, outDone)
	go read(errR, &stderr, errDone)
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	runErr := fn()
	os.Stdout, os.Stderr = oldOut, oldErr
	outW.Close()
	errW.Close()
	<-outDone
	<-errDone
	if runErr != nil {
		if l := lastLine(stderr.String()); l != "" && !strings.Contains(runErr.Error(), l) {
			return "", fmt.Errorf("%w (stderr: %s)", runErr, l)
		}
		return "", runErr
	}
	return stdout.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// measuredStamp is the first line of a regenerated measured block: when,
// with what and under what load it was measured.
func measuredStamp(b docgen.Block) string {
	load := "unknown"
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			load = strings.Join(f[:3], ", ")
		}
	}
	return fmt.Sprintf("Measured %s with `%s` on %d CPUs, load average (1, 5, 15 min) before the run: %s.",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), b.Command, runtime.NumCPU(), load)
}
