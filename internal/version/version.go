// Package version says which build of hetquic produced a result: the module
// version, the VCS commit and whether the tree was modified, and the Go
// toolchain. A paper's methods section needs exactly these, so every summary,
// report and the reproduce page record them.
package version

import (
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info identifies one build.
type Info struct {
	Module  string `json:"module"`
	Version string `json:"version"` // "(devel)" for a build from a checkout
	Commit  string `json:"commit"`  // "" when the build carries no VCS stamp (go test, go run of a file)
	Dirty   bool   `json:"dirty"`   // uncommitted changes in the tree the binary was built from
	Go      string `json:"go"`
	// CommitFrom says where Commit came from: "build" (the binary's own
	// stamp) or "git" (the working directory's repository, read at run time
	// because go run, go test and GOFLAGS=-buildvcs=false stamp nothing).
	CommitFrom string `json:"commit_from,omitempty"`
}

// Get reads the build's own stamp (debug.ReadBuildInfo); it never fails:
// fields the build lacks stay empty.
func Get() Info {
	info := Info{Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fromGit(info)
	}
	info.Module = bi.Main.Path
	info.Version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			info.Dirty = s.Value == "true"
		}
	}
	if info.Commit != "" {
		info.CommitFrom = "build"
		return info
	}
	return fromGit(info)
}

// fromGit fills Commit and Dirty from the working directory's git checkout,
// when there is one; a machine without git leaves them empty.
func fromGit(info Info) Info {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return info
	}
	info.Commit = strings.TrimSpace(string(out))
	info.CommitFrom = "git"
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	info.Dirty = err == nil && len(strings.TrimSpace(string(status))) > 0
	return info
}

// String is one line: "hetquic MODULE_VERSION commit SHORT[+dirty] GO".
func (i Info) String() string {
	commit := "unknown"
	if i.Commit != "" {
		commit = i.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if i.Dirty {
			commit += "+dirty"
		}
	}
	v := i.Version
	if v == "" {
		v = "(unknown)"
	}
	return fmt.Sprintf("hetquic %s commit %s %s", v, commit, i.Go)
}
