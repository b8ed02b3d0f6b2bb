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
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hetquic: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
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
	c, ok := commands[args[0]]
	if !ok {
		printUsage(os.Stderr)
		return badInput(fmt.Errorf("unknown command %q", args[0]))
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

func parseFlagsAny(fs interface{ Parse([]string) error }, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return badInput(err)
	}
	return nil
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
	return badInput(fmt.Errorf("%s: unknown subcommand %q (want %s)", name, args[0], subNames(subs)))
}

func subNames(subs []subcommand) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}
