// Package archtest enforces ARCHITECTURE.md's import directions: it reads
// the import clauses of every non-test Go file of the module (go/parser,
// no build) and checks them against Rules. Its test runs on the repository,
// so CI fails on an import that breaks the map, and on a fixture, so the
// checker itself is known to catch one.
package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Rule constrains the packages it applies to (a module-relative path, or
// path/... for a subtree, "." for the root package).
type Rule struct {
	Packages string
	// Deny are module packages (or path/... subtrees) the packages must not
	// import directly; DenyDeps the same for every package they depend on,
	// through any chain of module imports, plus external import prefixes
	// (e.g. github.com/quic-go/).
	Deny, DenyDeps []string
	// OnlyModule, when set, are the only module packages they may import.
	OnlyModule []string
	// DenyStd are standard packages they must not import (I/O, the clock).
	DenyStd []string
	// Except are packages under Packages the rule does not apply to.
	Except []string
	Why    string
}

// Rules is the import map of ARCHITECTURE.md, as checks. Rules deny rather
// than allow, so a new package obeys the rules of the tree it lands in
// without a line here.
var Rules = []Rule{
	{Packages: "cmd/...", Why: "the binary is the top; nothing imports it"}, // checked by denyCmd
	{Packages: "pathsel", OnlyModule: []string{}, DenyStd: pureStd,
		Why: "path selection is pure: no I/O, no clock, randomness injected"},
	{Packages: "internal/stats", OnlyModule: []string{}, DenyStd: slices.DeleteFunc(slices.Clone(pureStd), func(s string) bool { return s == "time" }),
		Why: "statistics are pure (time only for the Duration type)"},
	{Packages: "internal/akf", OnlyModule: []string{}, DenyStd: pureStd, Why: "the adaptive Kalman filter (MACO, QC-MAB) is pure"},
	{Packages: "peekaboo", OnlyModule: []string{}, DenyStd: pureStd, Why: "Peekaboo's LinUCB is pure: features in, action out"},
	{Packages: "qcmab", OnlyModule: []string{"internal/akf", "peekaboo"}, DenyStd: pureStd,
		Why: "QC-MAB (thesis ch. 4) is pure, so a real client can call it"},
	{Packages: "fec", OnlyModule: []string{}, DenyStd: pureStd, Why: "frame FEC is pure (the Reed–Solomon coder is a library)"},
	{Packages: "ride", OnlyModule: []string{}, DenyStd: slices.DeleteFunc(slices.Clone(pureStd), func(s string) bool { return s == "time" }),
		Why: "RIDE's model is pure: no file system, network or clock (time only for durations; the dataset loader is ride/dataset)"},
	{Packages: "internal/workpool", OnlyModule: []string{"internal/progress"}, Why: "the worker pool knows no mode"},
	{Packages: "internal/progress", OnlyModule: []string{}, Why: "a leaf: progress lines, elapsed and estimate"},
	{Packages: "internal/results", OnlyModule: []string{"internal/figure", "internal/version"}, Why: "the results writer knows no mode"},
	{Packages: "internal/version", OnlyModule: []string{}, Why: "a leaf: the build's own stamp"},
	{Packages: "internal/figure", OnlyModule: []string{}, Why: "figures know no mode"},
	{Packages: "internal/sweep", OnlyModule: []string{"internal/results", "internal/figure", "internal/workpool"}, Why: "sweeps, shards and partial results know no mode"},
	{Packages: "internal/yamlfile", OnlyModule: []string{}, Why: "a leaf"},
	{Packages: "internal/localpath", OnlyModule: []string{}, Why: "a leaf: what a local path is, for pcm, the agent and the CLI"},
	{Packages: ModeRegistry, OnlyModule: []string{"internal/results", "internal/workpool", "internal/sweep", "internal/yamlfile"},
		Why: "the mode seam knows no mode: modes import it, the command registers them"},
	{Packages: "scenario", OnlyModule: []string{"internal/yamlfile"}, Why: "the network description is shared by every backend"},
	{Packages: "internal/linkmodel", OnlyModule: []string{"scenario", "internal/stats"}, DenyStd: slices.DeleteFunc(slices.Clone(pureStd), func(s string) bool { return s == "time" }),
		Why: "the one link model of emu and sim is pure: time passed in, randomness injected (time only for durations)"},
	{Packages: "emu/...", Deny: []string{"pcm/...", "agent/...", "runner/...", "sim/...", "origin"},
		Why: "the emulator serves everything above it and knows none of it"},
	{Packages: "origin", Deny: []string{"pcm/...", "agent/...", "runner/...", "sim/...", "emu/..."}, Why: "an unmodified quic-go origin"},
	{Packages: "pcm", Deny: []string{"emu/...", "runner/...", "sim/...", "agent/...", "origin"},
		Why: "the PCM-QUIC client; its measurement harness is pcm/measure"},
	{Packages: "pcm/measure", Deny: []string{"runner/...", "sim/...", "agent/..."}, Why: "the real-QUIC harness sits beside pcm, below experiments"},
	{Packages: "agent", Deny: []string{"runner/...", "sim/...", "emu/...", "pcm/...", "origin", "agent/server"},
		Why: "ct-client is a product (its §V experiments are agent/runner) and shares only agent/wire and leaves with ct-server"},
	{Packages: "agent/tunnelgate", OnlyModule: []string{}, Why: "the tunnel gate is a leaf: slots, apps and a clock"},
	{Packages: "agent/identity", OnlyModule: []string{"internal/selfsigned"}, Why: "credentials on disk, a leaf: neither end of the agent"},
	{Packages: "agent/ops", OnlyModule: []string{}, Why: "metrics plumbing, status and sd_notify know neither end of the agent"},
	{Packages: "agent/wire", OnlyModule: []string{}, Why: "the protocol both ends share: a leaf, so that neither end imports the other"},
	{Packages: "agent/cache", OnlyModule: []string{"agent/wire"}, Why: "ct-client's prefetch store knows the protocol's headers, not the client"},
	{Packages: "agent/server", OnlyModule: []string{"agent/identity", "agent/idlebody", "agent/ops", "agent/wire", "internal/yamlfile"},
		Why: "ct-server shares the protocol and a few leaves with ct-client, never the client itself"},
	{Packages: "agent/idlebody", OnlyModule: []string{}, Why: "the request body's progress rule both ends apply, a leaf"},
	{Packages: "agent/socks5", OnlyModule: []string{}, Why: "the SOCKS5 wire format, pure parsing: a leaf"},
	{Packages: "agent/stripe", OnlyModule: []string{"agent/pathchoice", "agent/stripesched", "internal/pauseclock"},
		Why: "the striping engine reaches the client through its Host interface only (and tells its pauses by the shared clock edge)"},
	{Packages: "internal/pauseclock", OnlyModule: []string{}, Why: "the clock edge pcm and the stripe share: a leaf"},
	{Packages: "agent/clientfile", Deny: []string{"agent/server"}, Why: "ct-client's file knows the client, not ct-server"},
	{Packages: "agent/internal/memquic", OnlyModule: []string{"agent/wire", "emu/memnet", "internal/selfsigned"},
		Why: "the agent's QUIC on memnet, for tests: the protocol's configuration and the in-memory network only"},
	{Packages: "agent/internal/serverproc", OnlyModule: []string{},
		Why: "a ct-server process for the benchmarks, started through the caller's command: a leaf"},
	{Packages: "agent/uploadreplay", OnlyModule: []string{"agent/idlebody"},
		Why: "an upload's replay buffer is one bounded buffer over the body's progress rule, nothing of the client"},
	{Packages: "agent/socksproxy", OnlyModule: []string{"agent/socks5", "agent/wire"},
		Why: "the SOCKS5 front-end reaches the client through its Host interface only"},
	{Packages: "agent/tunnel", OnlyModule: []string{"agent/pathchoice", "agent/tunnelgate", "agent/wire"},
		Why: "ct-client's side of a resumable tunnel reaches the client through its Host and Path interfaces only"},
	{Packages: "agent/pathchoice", OnlyModule: []string{"pathsel"},
		DenyStd: slices.DeleteFunc(slices.Clone(pureStd), func(s string) bool { return s == "time" || s == "net/netip" }),
		Why:     "ct-client's path choice is pure: the paths' state and now in, a path out (time for instants, netip for addresses as values)"},
	{Packages: "agent/stripesched", OnlyModule: []string{}, DenyStd: slices.DeleteFunc(slices.Clone(pureStd), func(s string) bool { return s == "time" }),
		Why: "the striping policy is pure: estimates in, piece sizes out (time only for durations)"},
	{Packages: "sim/...", Deny: []string{"runner/...", "pcm", "emu/...", "agent/...", "origin"}, Except: []string{"sim/vsreal"},
		Why: "the simulator depends only on scenario (and sim/… on sim)"},
	{Packages: "sim/vsreal", Deny: []string{"runner/...", "agent/..."}, Why: "the sim-vs-real validation"},
	{Packages: "runner", DenyDeps: []string{"pcm/...", "emu/...", "sim/...", "agent/...", "origin", "github.com/quic-go/"},
		Why: "an offline run links no quic-go, emulator or simulator; mode real is runner/realenv"},
}

// pureStd are the standard packages a pure package must not import.
var pureStd = []string{"os", "os/exec", "net", "net/http", "net/netip", "io/fs", "io/ioutil", "syscall", "time", "math/rand"}

// Graph is the module's packages and their imports (non-test files).
type Graph struct {
	Module  string              // the module path
	Imports map[string][]string // module-relative package → import paths
	Files   map[string][]string // module-relative file → import paths
}

// The mode seam (internal/mode): a mode package is one that imports
// ModeRegistry. In the command, only RegistrationFile names them — the
// command dispatches no mode by hand, and a new mode touches no other
// command file. A subsystem with commands of its own (agent experiment,
// ride eval) keeps its mode adapter in a package apart (agentmode,
// ridemode), so that those commands use the subsystem, not the seam.
const (
	ModeRegistry     = "internal/mode"
	RegistrationFile = "cmd/hetquic/modes.go"
)

// Load reads the import clauses of every package under fsys (the module's
// root), skipping testdata, vendor and hidden directories, and nested
// modules (a directory with its own go.mod, such as third_party/quic-go):
// those are not the module's packages, as go's ./... does not list them.
func Load(fsys fs.FS, module string) (*Graph, error) {
	g := &Graph{Module: module, Imports: map[string][]string{}, Files: map[string][]string{}}
	fset := token.NewFileSet()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return fs.SkipDir
			}
			if _, err := fs.Stat(fsys, path.Join(p, "go.mod")); p != "." && err == nil {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := path.Dir(p)
		if _, ok := g.Imports[pkg]; !ok {
			g.Imports[pkg] = nil
		}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			g.Files[p] = append(g.Files[p], ip)
			if !slices.Contains(g.Imports[pkg], ip) {
				g.Imports[pkg] = append(g.Imports[pkg], ip)
			}
		}
		return nil
	})
	return g, err
}

// local is the module-relative path of import path ip, or "" for a
// package outside the module.
func (g *Graph) local(ip string) string {
	switch {
	case ip == g.Module:
		return "."
	case strings.HasPrefix(ip, g.Module+"/"):
		return strings.TrimPrefix(ip, g.Module+"/")
	}
	return ""
}

// match reports whether pkg is pattern (or under pattern/...).
func match(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
}

// isStd reports whether ip is a standard-library package.
func isStd(ip string) bool { return !strings.Contains(strings.SplitN(ip, "/", 2)[0], ".") }

// Check returns every violation of rules in g, one line each, sorted.
func (g *Graph) Check(rules []Rule) []string {
	var out []string
	pkgs := make([]string, 0, len(g.Imports))
	for p := range g.Imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		for _, ip := range g.Imports[pkg] {
			if l := g.local(ip); l != "" && match("cmd/...", l) {
				out = append(out, fmt.Sprintf("%s imports %s: nothing imports the command", pkg, l))
			}
		}
		for _, r := range rules {
			if !match(r.Packages, pkg) || matchAny(r.Except, pkg) {
				continue
			}
			for _, ip := range g.Imports[pkg] {
				l := g.local(ip)
				switch {
				case l != "" && matchAny(r.Deny, l):
					out = append(out, fmt.Sprintf("%s imports %s (%s)", pkg, l, r.Why))
				case l != "" && r.OnlyModule != nil && !slices.Contains(r.OnlyModule, l):
					out = append(out, fmt.Sprintf("%s imports %s, outside %v (%s)", pkg, l, r.OnlyModule, r.Why))
				case l == "" && isStd(ip) && slices.Contains(r.DenyStd, ip):
					out = append(out, fmt.Sprintf("%s imports %s (%s)", pkg, ip, r.Why))
				}
			}
			if len(r.DenyDeps) > 0 {
				out = append(out, g.checkDeps(pkg, r)...)
			}
		}
	}
	return append(out, g.checkModeSeam()...)
}

// checkModeSeam reports a command file other than RegistrationFile that
// imports a mode package.
func (g *Graph) checkModeSeam() []string {
	modes := map[string]bool{}
	for pkg, imports := range g.Imports {
		if pkg != ModeRegistry && !match("cmd/...", pkg) && slices.ContainsFunc(imports, func(ip string) bool { return g.local(ip) == ModeRegistry }) {
			modes[pkg] = true
		}
	}
	files := make([]string, 0, len(g.Files))
	for f := range g.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		if !match("cmd/...", path.Dir(f)) || f == RegistrationFile {
			continue
		}
		for _, ip := range g.Files[f] {
			if l := g.local(ip); modes[l] {
				out = append(out, fmt.Sprintf("%s imports mode package %s: only %s names modes (internal/mode)", f, l, RegistrationFile))
			}
		}
	}
	return out
}

// checkDeps walks pkg's module dependencies breadth first and reports the
// first chain to each denied package.
func (g *Graph) checkDeps(pkg string, r Rule) []string {
	var out []string
	via := map[string]string{pkg: ""}
	queue := []string{pkg}
	chain := func(p string) string {
		var c []string
		for ; p != ""; p = via[p] {
			c = append([]string{p}, c...)
		}
		return strings.Join(c, " → ")
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, ip := range g.Imports[p] {
			l := g.local(ip)
			if l == "" {
				for _, d := range r.DenyDeps {
					if !strings.Contains(d, ".") || !strings.HasPrefix(ip, d) {
						continue
					}
					out = append(out, fmt.Sprintf("%s depends on %s via %s (%s)", pkg, ip, chain(p), r.Why))
				}
				continue
			}
			if _, seen := via[l]; seen {
				continue
			}
			via[l] = p
			if matchAny(r.DenyDeps, l) {
				out = append(out, fmt.Sprintf("%s depends on %s via %s (%s)", pkg, l, chain(l), r.Why))
			}
			queue = append(queue, l)
		}
	}
	return out
}
