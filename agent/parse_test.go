package agent

import (
	"testing"
)

func TestParseHelpers(t *testing.T) {
	if lp, err := ParseLocalPath("wifi=127.0.0.2"); err != nil || lp.Name != "wifi" || lp.Addr.String() != "127.0.0.2" {
		t.Errorf("%+v %v", lp, err)
	}
	if lp, err := ParseLocalPath("::1"); err != nil || lp.Name != "::1" {
		t.Errorf("%+v %v", lp, err)
	}
	for _, bad := range []string{"", "wifi=", "=1.2.3.4", "wifi=notanip"} {
		if _, err := ParseLocalPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for in, want := range map[string]AppRule{"host": {Kind: "host"}, "port": {Kind: "port"}, "header:x-app": {Kind: "header", Header: "X-App"}} {
		if got, err := ParseAppRule(in); err != nil || got != want {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "header:", "ip"} {
		if _, err := ParseAppRule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
