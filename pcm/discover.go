package pcm

import (
	"fmt"

	"github.com/hetquic/hetquic/internal/localpath"
)

// DiscoverPaths lists one LocalPath per interface that is up and not a
// loopback, at its address by the one address rule (localpath.Pick):
// every network the host can reach the server through, as the PCM paper's
// client uses them. It is Config's default and `hetquic pcm`'s without
// --paths.
func DiscoverPaths() ([]LocalPath, error) {
	found, err := localpath.Discover()
	if err != nil {
		return nil, fmt.Errorf("pcm: %w", err)
	}
	out := make([]LocalPath, len(found))
	for i, p := range found {
		out[i] = LocalPath{Name: p.Name, Addr: p.Addr}
	}
	return out, nil
}

// InterfacePath is the LocalPath of the named interface (its address by
// the rule DiscoverPaths uses).
func InterfacePath(name string) (LocalPath, error) {
	addrs, loopback, err := localpath.SystemAddrs(name)
	if err != nil {
		return LocalPath{}, fmt.Errorf("pcm: %w", err)
	}
	a, err := localpath.Pick(name, addrs, loopback)
	if err != nil {
		return LocalPath{}, fmt.Errorf("pcm: %w", err)
	}
	return LocalPath{Name: name, Addr: a}, nil
}

// ParsePaths parses a --paths list (localpath's grammar: items
// [NAME=](ADDRESS|INTERFACE), comma-separated); "" discovers the paths.
// pcm takes no roles.
func ParsePaths(spec string) ([]LocalPath, error) {
	if spec == "" {
		return DiscoverPaths()
	}
	parsed, err := localpath.ParseList(spec, localpath.SystemAddrs)
	if err != nil {
		return nil, fmt.Errorf("pcm: --paths: %w", err)
	}
	out := make([]LocalPath, len(parsed))
	for i, p := range parsed {
		if p.Role != "" {
			return nil, fmt.Errorf("pcm: --paths: path %s: role %q is the agent's; pcm takes none", p.Name, p.Role)
		}
		out[i] = LocalPath{Name: p.Name, Addr: p.Addr}
	}
	return out, nil
}
