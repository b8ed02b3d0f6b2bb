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
		{"validate", "load a scenario file and the traces it names, report the first problem", scenarioValidate},
	}, args)
}

func scenarioValidate(_ context.Context, args []string) error {
	fs := newFlagSet("scenario validate", "scenario validate FILE",
		"Loads a scenario file (the network: paths × directions, events, traces) and reports the first\nproblem, or what it describes. An experiment file names it with scenario: FILE.")
	file, err := parseWithOperand(fs, args, "scenario file")
	if err != nil {
		return err
	}
	s, err := loadScenarioFile(file)
	if err != nil {
		return badInput(err)
	}
	names := make([]string, len(s.Paths))
	for i, p := range s.Paths {
		names[i] = p.Name
	}
	fmt.Printf("%s: ok (scenario %s: %d paths: %s; %d timed events)\n", file, s.Name, len(s.Paths), strings.Join(names, ", "), len(s.Events))
	return nil
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
