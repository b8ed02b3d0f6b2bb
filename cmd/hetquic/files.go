package main

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hetquic/hetquic/scenario"
)

// hostFS opens the host's files by absolute path. The loaders take an
// fs.FS (built-in files are embedded) and resolve what a file names
// relative to it (path.Join(path.Dir(name), …)); given absolute names, they
// resolve ../x like the shell and their errors show the real path, which
// os.DirFS("/") (names without the leading /) and os.DirFS(".") (no ../,
// no absolute path) do not. Names are not fs.ValidPath: only this
// command's loaders use it.
type hostFS struct{}

func (hostFS) Open(name string) (fs.File, error)     { return os.Open(filepath.FromSlash(name)) }
func (hostFS) ReadFile(name string) ([]byte, error)  { return os.ReadFile(filepath.FromSlash(name)) }
func (hostFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(filepath.FromSlash(name)) }

// hostPath is p as hostFS names it: absolute, slash-separated.
func hostPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	return filepath.ToSlash(abs), err
}

// loadScenarioFile loads a scenario from a path, relative to the working
// directory or absolute; trace files it names resolve relative to its
// directory.
func loadScenarioFile(p string) (*scenario.Scenario, error) {
	abs, err := hostPath(p)
	if err != nil {
		return nil, err
	}
	return scenario.Load(hostFS{}, abs)
}
