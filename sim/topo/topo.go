// Package topo describes network topologies for the simulator (nodes and
// bidirectional links, loaded from YAML), finds paths in them (Dijkstra,
// Yen's k shortest paths) and implements the min-FCT paper's path-set
// selection (mpquic-min-fct §3.2, Eq. 19, Algorithms 1–2). It does no
// simulation and no I/O beyond reading a file.
package topo

import (
	"embed"
	"fmt"
	"io/fs"
	"math"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// Builtin holds the shipped topologies (topologies/*.yaml).
//
//go:embed topologies/*.yaml
var Builtin embed.FS

// Topology is a graph of named nodes and bidirectional links.
type Topology struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Nodes       []string `yaml:"nodes"`
	Links       []Link   `yaml:"links"`

	index map[string]int
	adj   [][]adjEntry // per node: neighbours and link index
}

// Link joins nodes A and B; both directions get the same parameters.
type Link struct {
	A            string  `yaml:"a"`
	B            string  `yaml:"b"`
	DelayMs      float64 `yaml:"delay_ms"`
	RateMbps     float64 `yaml:"rate_mbps"`
	Loss         float64 `yaml:"loss"`
	QueuePackets int     `yaml:"queue_packets"`
}

type adjEntry struct{ to, link int }

// Load reads a topology: a path in fsys, or "builtin:NAME" for a shipped one.
func Load(fsys fs.FS, name string) (*Topology, error) {
	if len(name) > 8 && name[:8] == "builtin:" {
		fsys, name = Builtin, "topologies/"+name[8:]+".yaml"
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load topology: %w", err)
	}
	return Parse(name, data)
}

// Parse decodes and validates topology text.
func Parse(name string, data []byte) (*Topology, error) {
	var t Topology
	if err := yamlfile.Decode(name, data, &t); err != nil {
		return nil, err
	}
	if err := t.init(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &t, nil
}

// init validates the topology and builds the adjacency lists.
func (t *Topology) init() error {
	if t.Name == "" {
		return fmt.Errorf("name: missing")
	}
	if len(t.Nodes) < 2 {
		return fmt.Errorf("nodes: at least two nodes are needed")
	}
	t.index = map[string]int{}
	for i, n := range t.Nodes {
		if n == "" {
			return fmt.Errorf("nodes[%d]: empty name", i)
		}
		if _, dup := t.index[n]; dup {
			return fmt.Errorf("nodes[%d]: duplicate node %q", i, n)
		}
		t.index[n] = i
	}
	t.adj = make([][]adjEntry, len(t.Nodes))
	seen := map[[2]int]bool{}
	for i, l := range t.Links {
		f := fmt.Sprintf("links[%d]", i)
		a, ok := t.index[l.A]
		if !ok {
			return fmt.Errorf("%s.a: no node named %q", f, l.A)
		}
		b, ok := t.index[l.B]
		if !ok {
			return fmt.Errorf("%s.b: no node named %q", f, l.B)
		}
		if a == b {
			return fmt.Errorf("%s: a link from %q to itself", f, l.A)
		}
		if seen[[2]int{min(a, b), max(a, b)}] {
			return fmt.Errorf("%s: duplicate link %s–%s", f, l.A, l.B)
		}
		seen[[2]int{min(a, b), max(a, b)}] = true
		switch {
		case !(l.DelayMs >= 0) || math.IsInf(l.DelayMs, 0):
			return fmt.Errorf("%s.delay_ms: %v must be a finite number ≥ 0", f, l.DelayMs)
		case !(l.RateMbps > 0) || math.IsInf(l.RateMbps, 0):
			return fmt.Errorf("%s.rate_mbps: %v must be a finite number > 0", f, l.RateMbps)
		case !(l.Loss >= 0 && l.Loss < 1):
			return fmt.Errorf("%s.loss: %v is outside [0, 1)", f, l.Loss)
		case l.QueuePackets < 0:
			return fmt.Errorf("%s.queue_packets: %d is negative", f, l.QueuePackets)
		}
		t.adj[a] = append(t.adj[a], adjEntry{b, i})
		t.adj[b] = append(t.adj[b], adjEntry{a, i})
	}
	return nil
}

// Node returns the index of the named node.
func (t *Topology) Node(name string) (int, bool) {
	i, ok := t.index[name]
	return i, ok
}

// LinkBetween returns the index of the link joining u and v, or -1.
func (t *Topology) LinkBetween(u, v int) int {
	for _, e := range t.adj[u] {
		if e.to == v {
			return e.link
		}
	}
	return -1
}

// Path is a loop-free sequence of node indices.
type Path []int

// Links returns the link indices along p.
func (t *Topology) PathLinks(p Path) []int {
	out := make([]int, 0, len(p)-1)
	for i := 0; i+1 < len(p); i++ {
		out = append(out, t.LinkBetween(p[i], p[i+1]))
	}
	return out
}

// DelayMs is the one-way propagation delay of p (min-FCT Eq. 4: the sum).
func (t *Topology) DelayMs(p Path) float64 {
	d := 0.0
	for _, l := range t.PathLinks(p) {
		d += t.Links[l].DelayMs
	}
	return d
}

// Loss is p's end-to-end loss probability (min-FCT Eq. 5: 1 − Π(1 − o_l)).
func (t *Topology) Loss(p Path) float64 {
	ok := 1.0
	for _, l := range t.PathLinks(p) {
		ok *= 1 - t.Links[l].Loss
	}
	return 1 - ok
}

// String renders p with node names.
func (t *Topology) String(p Path) string {
	s := ""
	for i, n := range p {
		if i > 0 {
			s += "-"
		}
		s += t.Nodes[n]
	}
	return s
}
