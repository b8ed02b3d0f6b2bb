// Package agentmode is mode agent (internal/mode): the agent's §V
// experiment files run through hetquic exp run. It is apart from
// agent/runner so that the agent command, which runs the same
// experiments with its own flags, uses the experiments and not the mode
// seam: only cmd/hetquic/modes.go names a mode package (internal/archtest).
package agentmode

import (
	"context"
	"fmt"
	"io/fs"

	"go.yaml.in/yaml/v3"

	agentrunner "github.com/hetquic/hetquic/agent/runner"
	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Mode is mode agent (internal/mode). Its runs do not shard: they share
// one emulated network and its timing.
var Mode = mode.Mode{
	Name:    "agent",
	NoShard: "it runs real agents on loopback one at a time and times that one network, so its runs cannot run apart",
	Load: func(fsys fs.FS, name string) (mode.Experiment, error) {
		if data, err := fs.ReadFile(fsys, name); err == nil && hasSweep(data) {
			// The strict decoder would only call it an unknown field.
			return nil, fmt.Errorf("%s: sweep: %w", name, mode.NoShardError("agent"))
		}
		s, err := agentrunner.Load(fsys, name)
		if err != nil {
			return nil, err
		}
		return modeExp{s}, nil
	},
}

// hasSweep reports whether an experiment file has a sweep: block.
func hasSweep(data []byte) bool {
	var doc struct {
		Sweep yaml.Node `yaml:"sweep"`
	}
	return yaml.Unmarshal(data, &doc) == nil && doc.Sweep.Kind != 0
}

// modeExp is a loaded agent experiment.
type modeExp struct{ s *agentrunner.Spec }

func (e modeExp) Describe() string {
	return fmt.Sprintf("agent experiment %s, scale %g, %d run(s)", e.s.Agent.Experiment, e.s.Agent.Scale, e.s.Agent.Repeat)
}

func (e modeExp) SetSeeds(int) error {
	return fmt.Errorf("--seeds: mode agent has no seeds to override (its spec's agent.repeat)")
}

func (e modeExp) Run(ctx context.Context, opt workpool.Options) (*mode.Outcome, error) {
	res, err := agentrunner.Run(ctx, e.s, opt, nil)
	if err != nil {
		return nil, err
	}
	tables := res.Tables()
	return &mode.Outcome{Tables: tables, Summary: res.Summary(), Runs: e.s.Agent.Repeat, Write: func(_ context.Context, dir string) ([]string, error) { return res.WriteAll(dir) }, Text: mode.TablesText(tables)}, nil
}
