package wire

import "testing"

// TestUDPPaths: the RFC 9298 path template round-trips every address
// form, and bad paths are refused.
func TestUDPPaths(t *testing.T) {
	for _, target := range []string{"192.0.2.6:443", "[2001:db8::42]:53", "dns.example:53"} {
		p, err := UDPRequestPath(target)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseUDPPath(p)
		if err != nil || got != target {
			t.Errorf("%s → %s → %q %v", target, p, got, err)
		}
	}
	for _, bad := range []string{"/x", UDPPathPrefix, UDPPathPrefix + "h/0/", UDPPathPrefix + "h/70000/", UDPPathPrefix + "h/53/x/", UDPPathPrefix + "%zz/53/"} {
		if got, err := ParseUDPPath(bad); err == nil {
			t.Errorf("%q parsed as %q", bad, got)
		}
	}
	b := AppendDatagram(nil, 8, []byte("payload"))
	if id, p, err := ParseDatagram(b); err != nil || id != 8 || string(p) != "payload" {
		t.Fatalf("datagram round trip: %d %q %v", id, p, err)
	}
	if _, _, err := ParseDatagram([]byte{0x02, 0x01, 'x'}); err == nil {
		t.Fatal("context ID 1 accepted")
	}
}
