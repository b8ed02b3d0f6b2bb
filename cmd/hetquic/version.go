package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hetquic/hetquic/internal/version"
)

func init() {
	register(command{name: "version", summary: "print the build: module version, commit (+dirty), Go version", run: runVersion})
}

func runVersion(_ context.Context, args []string) error {
	fs := newFlagSet("version", "version", "Prints the module version, the VCS commit the binary was built from (with +dirty when the tree had uncommitted changes) and the Go toolchain. Every summary.json, report.md and the reproduce page record the same line.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("version takes no arguments, got %q", fs.Arg(0)))
	}
	fmt.Fprintln(os.Stdout, version.Get())
	return nil
}
