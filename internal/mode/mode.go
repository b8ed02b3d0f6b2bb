// Package mode is the seam between the hetquic command and the modes that
// run experiments (offline, trace, real, sim, agent, video, ride, …). A mode
// is one package that implements Mode; the command registers every mode in
// one list (cmd/hetquic/modes.go) and otherwise knows none of them, as
// database/sql knows no driver: `exp run|validate|merge|slurm` read a file's
// envelope here, hand the file to its mode's Load, and drive the Experiment
// it returns. Adding a mode is a package and a line in that list.
//
// The package knows no mode (internal/archtest): it imports only the
// packages every mode writes through.
package mode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Mode is one backend of experiment files.
type Mode struct {
	// Name is what a file's mode: field says.
	Name string
	// Infer are top-level fields only this mode's files have: a file
	// without mode: but with one of them is this mode's (the simulator's
	// files predate the mode field).
	Infer []string
	// Default makes this the mode of a file without mode: and without any
	// mode's Infer field (offline).
	Default bool
	// NoShard, when set, says why the mode's runs cannot run apart: it
	// has no exp run --shard, exp merge, exp slurm or sweep: block, and
	// Load returns an Experiment that is not Sharded.
	NoShard string
	// Load reads, decodes strictly and validates experiment file name of
	// fsys and what it names (scenario, trace, topology, policy).
	Load func(fsys fs.FS, name string) (Experiment, error)
}

// Experiment is one loaded, validated experiment file of a mode.
type Experiment interface {
	// Describe is one line on what it runs (exp run's first line, exp
	// validate's answer).
	Describe() string
	// SetSeeds overrides its seeds per point (exp run --seeds; n ≥ 1);
	// a mode without seeds to override says so.
	SetSeeds(n int) error
	// Run runs every run in this process.
	Run(ctx context.Context, opt workpool.Options) (*Outcome, error)
}

// Sharded is an Experiment whose runs are independent and numbered the
// same in every process (internal/sweep), so that shards of them run apart
// and merge into what one process would have written, file for file.
type Sharded interface {
	Experiment
	// Runs is how many runs it has.
	Runs() int
	// RunShard runs the runs shard owns and writes them into dir for
	// Merge; spec is the experiment as named on the command line. It
	// returns how many runs it wrote.
	RunShard(ctx context.Context, shard sweep.Shard, opt workpool.Options, dir, spec string) (int, error)
	// Merge reads the shards in dirs and assembles the outcome; workers
	// bound what merging recomputes. Bad or missing shards are InputErrors.
	Merge(ctx context.Context, dirs []string, workers int) (*Outcome, error)
}

// Outcome is a finished experiment of any mode.
type Outcome struct {
	// Tables are report.md's tables (what exp run --md prints).
	Tables []results.Table
	// Summary is summary.json (what exp run --json prints).
	Summary results.Summary
	// Write writes every file of the results into dir and lists them; a
	// cancelled ctx stops it (the command writes into a temporary
	// directory, so nothing half-written is left).
	Write func(ctx context.Context, dir string) ([]string, error)
	// Text prints the terminal's table.
	Text func(w io.Writer) error
	// Runs is how many runs it took.
	Runs int
}

// TablesText is an Outcome.Text that prints the report's tables.
func TablesText(tables []results.Table) func(io.Writer) error {
	return func(w io.Writer) error { return results.WriteTables(w, tables) }
}

// InputError marks an error caused by the user's input (a shard of another
// experiment, a missing run): the command exits with 2.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }
func (e InputError) Unwrap() error { return e.Err }

// registry is every registered mode, in registration order.
var registry []Mode

// Register adds modes; the command does it once, in cmd/hetquic/modes.go.
// A name registered twice, a second default or a mode without Load panics:
// a programming error the first run shows.
func Register(modes ...Mode) {
	for _, m := range modes {
		switch {
		case m.Name == "" || m.Load == nil:
			panic(fmt.Sprintf("mode.Register: mode %q without name or Load", m.Name))
		case slices.ContainsFunc(registry, func(r Mode) bool { return r.Name == m.Name }):
			panic(fmt.Sprintf("mode.Register: mode %q registered twice", m.Name))
		case m.Default && slices.ContainsFunc(registry, func(r Mode) bool { return r.Default }):
			panic(fmt.Sprintf("mode.Register: a second default mode %q", m.Name))
		}
		registry = append(registry, m)
	}
}

// Names are the registered modes' names, in registration order.
func Names() []string {
	names := make([]string, len(registry))
	for i, m := range registry {
		names[i] = m.Name
	}
	return names
}

// Lookup is the registered mode name.
func Lookup(name string) (Mode, bool) {
	i := slices.IndexFunc(registry, func(m Mode) bool { return m.Name == name })
	if i < 0 {
		return Mode{}, false
	}
	return registry[i], true
}

// Load reads the envelope of file name of fsys and hands the file to its
// mode's Load.
func Load(fsys fs.FS, name string) (Envelope, Experiment, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Envelope{}, nil, fmt.Errorf("load experiment: %w", err)
	}
	env, err := ReadEnvelope(name, data)
	if err != nil {
		return env, nil, err
	}
	m, _ := Lookup(env.Mode)
	e, err := m.Load(fsys, name)
	return env, e, err
}

// ErrNoShard is wrapped by NoShardError.
var ErrNoShard = errors.New("does not shard or sweep")

// NoShardError says that mode name's runs do not shard, and why, and which
// modes do.
func NoShardError(name string) error {
	why := "it has no independent runs"
	if m, ok := Lookup(name); ok && m.NoShard != "" {
		why = m.NoShard
	}
	var shard []string
	for _, m := range registry {
		if m.NoShard == "" {
			shard = append(shard, m.Name)
		}
	}
	list := strings.Join(shard, ", ")
	if n := len(shard); n > 1 {
		list = strings.Join(shard[:n-1], ", ") + " and " + shard[n-1]
	}
	return fmt.Errorf("mode %s %w: %s (modes %s do)", name, ErrNoShard, why, list)
}
