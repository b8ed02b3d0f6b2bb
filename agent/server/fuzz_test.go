package server

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseAllowInternal: allow_internal entries. What it accepts is a
// canonical prefix that contains the entry's address.
func FuzzParseAllowInternal(f *testing.F) {
	for _, s := range []string{"10.1.2.3", "192.168.0.0/24", "fd00::5", "::ffff:10.9.9.9", "192.168.1.7/24", "fe80::1%eth0", "0.0.0.0/0", " 10.0.0.1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		ps, err := ParseAllowInternal([]string{entry})
		if err != nil {
			return
		}
		p := ps[0]
		if !p.IsValid() || p.Masked() != p || p.Addr().Zone() != "" || p.Addr().Is4In6() {
			t.Fatalf("%q → %v", entry, p)
		}
		if a, err := netip.ParseAddr(strings.TrimSpace(entry)); err == nil && !p.Contains(a.Unmap()) {
			t.Fatalf("%q → %v does not contain it", entry, p)
		}
	})
}

// FuzzServerFile and FuzzClientFile: the YAML configurations.
func FuzzServerFile(f *testing.F) {
	f.Add([]byte(sampleServerYAML))
	f.Add([]byte("listen: [1, 2]\n"))
	f.Add([]byte("clients:\n  - {id: a, token: short}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := ParseFile("s.yaml", data)
		if err != nil {
			return
		}
		for _, c := range sf.Clients {
			if c.ID == "" || len(c.Token) < 16 {
				t.Fatalf("accepted client %+v", c)
			}
		}
		if sf.HeaderTimeoutMS < 0 || sf.MemoryBudget < 0 {
			t.Fatalf("accepted negative values: %+v", sf)
		}
	})
}

const sampleServerYAML = `listen: 127.0.0.1:4433
self_signed: true
state_dir: /var/lib/hetquic
allow: [app.internal:80]
allow_internal: [10.1.2.3, 192.168.0.0/24]
prefetch: [http://app.internal/x]
limits: {max_streams: 10, max_tunnels: 4, max_conns: 2, max_prefetch: 1, max_buffer_bytes: 1000000, rate_bytes_per_sec: 1000000}
clients:
  - {id: alice, token: 0123456789abcdef01, limits: {max_bytes: 100}}
memory_budget: 100000000
`
