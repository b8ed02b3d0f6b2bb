package version

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "(devel)", Commit: "0123456789abcdef", Go: "go1.26"}, "hetquic (devel) commit 0123456789ab go1.26"},
		{Info{Version: "v1.2.3", Commit: "abc", Dirty: true, Go: "go1.26"}, "hetquic v1.2.3 commit abc+dirty go1.26"},
		{Info{Go: "go1.26"}, "hetquic (unknown) commit unknown go1.26"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.info, got, tc.want)
		}
	}
}

func TestGetNamesToolchain(t *testing.T) {
	if got := Get(); !strings.HasPrefix(got.Go, "go") {
		t.Fatalf("Get().Go = %q, want the Go version", got.Go)
	}
}
