package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hetquic/hetquic/agent/faults"
)

// agentFaults runs the fault matrix (agent/faults) and prints it.
func agentFaults(ctx context.Context, args []string) error {
	fs := newFlagSet("agent faults", "agent faults [--md]", agentHelp+`

faults runs a ct-server, a ct-client of two paths and an app-server on
loopback in this process, once per cell of: (ct-client SIGTERM, ct-server
SIGTERM, ct-server SIGKILL + restart, path cut, path black-hole) ×
(HTTP/1.0 body without length, HTTP/1.1 with Content-Length, CONNECT
tunnel), each fault a third into a 6 MB transfer. Every cell must end
intact or reset, never short (a clean end before the data's end); it exits
1 otherwise (agent/DESIGN.md, "Faults").`)
	md := fs.Bool("md", false, "print the README's markdown table only")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("agent faults: unexpected argument %q", fs.Arg(0)))
	}
	cells, err := faults.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Print(faults.Markdown(cells))
	var bad []string
	for _, c := range cells {
		if !c.OK() {
			bad = append(bad, fmt.Sprintf("%s × %s: %s at %d bytes (%s)", c.Fault, c.Kind, c.Outcome, c.Bytes, c.Detail))
		}
	}
	if !*md {
		fmt.Printf("%d cells, %d short\n", len(cells), len(bad))
	}
	if len(bad) > 0 {
		return fmt.Errorf("agent faults: %s", strings.Join(bad, "; "))
	}
	return nil
}
