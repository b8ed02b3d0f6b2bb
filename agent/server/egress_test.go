package server

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// TestInternalRanges pins what counts as internal, row by row.
func TestInternalRanges(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		internal bool
	}{
		{"169.254.169.254", true}, {"127.0.0.1", true}, {"127.8.9.1", true}, {"10.1.2.3", true},
		{"172.16.0.1", true}, {"172.32.0.1", false}, {"192.168.1.1", true}, {"100.64.0.1", true},
		{"100.100.100.200", true}, {"100.128.0.1", false}, {"0.0.0.0", true}, {"224.0.0.1", true},
		{"255.255.255.255", true}, {"168.63.129.16", true}, {"192.0.0.192", true}, {"8.8.8.8", false},
		{"93.184.216.34", false}, {"::1", true}, {"::", true}, {"fe80::1", true}, {"fe80::1%eth0", true},
		{"fd00:ec2::254", true}, {"fc00::1", true}, {"ff02::1", true}, {"::ffff:169.254.169.254", true},
		{"::ffff:8.8.8.8", false}, {"64:ff9b::a9fe:a9fe", true}, {"64:ff9b::808:808", false},
		{"2001:4860:4860::8888", false}, {"64:ff9b:1::1", true},
	} {
		if got := internalWhat(netip.MustParseAddr(tc.addr)) != ""; got != tc.internal {
			t.Errorf("%s: internal %v, want %v", tc.addr, got, tc.internal)
		}
	}
}

// TestParseAllowInternal: addresses and prefixes; typos are errors.
func TestParseAllowInternal(t *testing.T) {
	ps, err := ParseAllowInternal([]string{"10.1.2.3", "192.168.0.0/24", "fd00::5", "::ffff:10.9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ps); got != "[10.1.2.3/32 192.168.0.0/24 fd00::5/128 10.9.9.9/32]" {
		t.Fatalf("%s", got)
	}
	for _, bad := range []string{"192.168.1.7/24", "app.test", "10.0.0.0/33", "fe80::1%eth0", ""} {
		if _, err := ParseAllowInternal([]string{bad}); err == nil || !strings.Contains(err.Error(), "allow_internal") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
