package localpath

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// fakeAddrs is an AddrsFunc over a fixed table of interfaces.
func fakeAddrs(name string) ([]netip.Addr, bool, error) {
	m := map[string][]string{
		"wlan0": {"fe80::1", "169.254.3.4", "2001:db8::5", "192.168.1.7"},
		"wwan0": {"fe80::2", "2001:db8::9"},
		"lo":    {"127.0.0.1", "::1"},
		"dead":  {"fe80::3"},
	}
	list, ok := m[name]
	if !ok {
		return nil, false, errors.New("no such interface")
	}
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, name == "lo", nil
}

// TestParse: the grammar and the address rule, one table.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Path
		err  string
	}{
		{in: "10.0.0.2", want: Path{Name: "10.0.0.2", Addr: netip.MustParseAddr("10.0.0.2")}},
		{in: "wifi=10.0.0.2/backup", want: Path{Name: "wifi", Addr: netip.MustParseAddr("10.0.0.2"), Role: "backup"}},
		{in: "wlan0", want: Path{Name: "wlan0", Addr: netip.MustParseAddr("192.168.1.7"), Iface: "wlan0"}},
		{in: "lte=wwan0/metered", want: Path{Name: "lte", Addr: netip.MustParseAddr("2001:db8::9"), Iface: "wwan0", Role: "metered"}},
		{in: "lo", want: Path{Name: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Iface: "lo"}},
		{in: " v6=::1 ", want: Path{Name: "v6", Addr: netip.MustParseAddr("::1")}},
		{in: "dead", err: "no usable address"},
		{in: "nosuch", err: "no such interface"},
		{in: "=10.0.0.1", err: "want [NAME=]"},
		{in: "x=", err: "want [NAME=]"},
		{in: "", err: "want [NAME=]"},
		{in: "wifi=wlan0/", err: "want [NAME=]"},
	} {
		got, err := Parse(tc.in, fakeAddrs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList("wlan0, lte=wwan0", fakeAddrs)
	if err != nil || len(got) != 2 || got[1].Name != "lte" {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := ParseList("a=10.0.0.1,a=10.0.0.2", fakeAddrs); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a name given twice: %v", err)
	}
}

// FuzzParse: Parse never panics, and what it accepts has a name and a
// valid address.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"wlan0", "a=10.0.0.1/backup", "=", "x=lo/", "::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s, fakeAddrs)
		if err == nil && (p.Name == "" || !p.Addr.IsValid()) {
			t.Errorf("%q accepted as %+v", s, p)
		}
	})
}
