// Command hetquic uses all of a multi-homed host's networks over QUIC and is
// the bench on which the ways of doing so are reproduced and compared.
//
// Each subcommand lives in its own file and registers itself in init; run
// "hetquic help" for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand. run gets the arguments after its name and a
// context cancelled on SIGINT/SIGTERM, so every command cleans up on Ctrl-C.
type command struct {
	name    string
	summary string // one line for "hetquic help"
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// usageError marks bad input (flags, files, arguments): exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badInput wraps err so that main exits with code 2.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:])
	interrupted := ctx.Err() != nil // a signal, not the command, stopped it
	stop()
	os.Exit(exitCode(err, interrupted, os.Stderr))
}

// exitCode prints err and returns the exit status: 130 (128 + SIGINT, what
// shells expect) when a signal interrupted the command, 2 for bad input, 1
// for any other failure.
func exitCode(err error, interrupted bool, w io.Writer) int {
	switch {
	case err == nil:
		return 0
	case interrupted:
		fmt.Fprintln(w, "hetquic: interrupted")
		return 130
	}
	fmt.Fprintf(w, "hetquic: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		printUsage(os.Stderr)
		return badInput(errors.New("missing command (hetquic help COMMAND for its flags)"))
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 2 && args[1] == "--md" {
			printCommandTable(os.Stdout)
			return nil
		}
		if len(args) > 1 {
			return dispatch(ctx, []string{args[1], "--help"})
		}
		printUsage(os.Stdout)
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := commands[args[0]]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		return badInput(fmt.Errorf("unknown command %q%s (hetquic help lists them)", args[0], didYouMean(args[0], names)))
	}
	err := c.run(ctx, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed the help the user asked for
	}
	return err
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "hetquic — use every network of a multi-homed host over QUIC, and measure how well.")
	fmt.Fprintln(w, "\nUsage: hetquic COMMAND [ARGS]   (hetquic help COMMAND for its flags)\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// printCommandTable prints every command as a Markdown table (hetquic help
// --md: the README's command table).
func printCommandTable(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "| command | what it does |\n|---|---|")
	for _, n := range names {
		fmt.Fprintf(w, "| `hetquic %s` | %s |\n", n, strings.ReplaceAll(commands[n].summary, "|", `\|`))
	}
}

// newFlagSet returns a flag set whose -h prints usage (a one-line synopsis
// and a description) followed by every flag.
func newFlagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: hetquic %s\n\n%s\n", synopsis, strings.TrimSpace(description))
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args and marks a parse failure as bad input.
func parseFlags(fs *flag.FlagSet, args []string) error { return parseFlagsAny(fs, args) }

// parseFlagsAny parses args. The flag package prints the error and the
// whole usage on a bad flag, and main prints the error again; here a bad
// flag is one line — the error and where the flags are listed — and only
// -h prints the usage.
func parseFlagsAny(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf strings.Builder
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(os.Stdout, buf.String()) // asked for: stdout, like group help (| less)
		return err
	}
	return badInput(fmt.Errorf("%s: %w (hetquic %s -h lists its flags)", fs.Name(), err, fs.Name()))
}

// didYouMean is ", did you mean X?" for the name among names closest to
// typed (at most a third of its letters off), or "".
func didYouMean(typed string, names []string) string {
	best, bestD := "", len(typed)/3+1
	for _, n := range names {
		if d := editDistance(typed, n); d < bestD || d == bestD && best != "" && n < best {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(", did you mean %s?", best)
}

// editDistance is the edit distance between a and b counting an insertion,
// a deletion, a substitution or a swap of neighbours as one (optimal
// string alignment): "lsit" is one edit from "list".
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// subcommand is one verb of a command that has several (hetquic emu relay).
type subcommand struct {
	name, summary string
	run           func(ctx context.Context, args []string) error
}

// runSubcommand runs the subcommand args[0] of command name. With no
// argument (bad input) or -h it prints help — the command's description and
// every subcommand — and a missing or unknown subcommand exits with 2.
func runSubcommand(ctx context.Context, name, help string, subs []subcommand, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := os.Stdout
		if len(args) == 0 {
			w = os.Stderr
		}
		fmt.Fprintf(w, "Usage: hetquic %s SUBCOMMAND [ARGS]   (hetquic %s SUBCOMMAND -h for its flags)\n\n%s\n\nSubcommands:\n",
			name, name, strings.TrimSpace(help))
		for _, s := range subs {
			fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
		}
		if len(args) == 0 {
			return badInput(fmt.Errorf("%s: missing subcommand (%s)", name, subNames(subs)))
		}
		return nil
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:])
		}
	}
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return badInput(fmt.Errorf("%s: unknown subcommand %q%s (want %s)", name, args[0], didYouMean(args[0], names), subNames(subs)))
}

func subNames(subs []subcommand) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}
