package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/hetquic/hetquic/scenario"
)

func init() {
	register(command{name: "scenario", summary: "scenario files: which fields each backend honours (scenario fields --md)", run: runScenario})
}

func runScenario(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "scenario", "Scenario files describe the network (see docs/scenario-fields.md).", []subcommand{
		{"fields", "print the field × backend table: honoured, translated or error", scenarioFields},
	}, args)
}

func scenarioFields(_ context.Context, args []string) error {
	fs := newFlagSet("scenario fields", "scenario fields [--md]", "Prints how each backend (offline model, real mode, emulator, simulator) treats each scenario field.")
	md := fs.Bool("md", false, "the Markdown table with every note (what docs/scenario-fields.md pastes)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *md {
		_, err := fmt.Fprint(os.Stdout, scenario.FieldsMarkdown())
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "field\t"+strings.Join(scenario.Backends, "\t"))
	for _, f := range scenario.FieldTable {
		row := f.Name
		for _, b := range scenario.Backends {
			row += "\t" + f.Rules[b].Support.String()
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}
