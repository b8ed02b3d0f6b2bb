package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hetquic/hetquic/agent/ops"
)

// TestWriteStatus: "agent status" of a ct-client after a request (its path
// up, the bytes it received) and of its ct-server (the client's line, a
// limit that bit); text that is no agent's metrics is an error.
func TestWriteStatus(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 2, true, nil)
	if resp, _ := tc.get(t, up.URL+"/bytes/2000000"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if resp, _ := tc.get(t, "http://not-allowed.test/"); resp.StatusCode != 403 {
		t.Fatal(resp.Status)
	}
	var m, out bytes.Buffer
	tc.WriteMetrics(&m)
	if err := ops.WriteStatus(&out, &m); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log("\n" + s)
	if !strings.HasPrefix(s, "ct-client: 2 of 2 paths up") || !strings.Contains(s, "p0    up") || !strings.Contains(s, "p1    up") ||
		!(strings.Contains(s, "2.0 MB") || strings.Contains(s, "1.0 MB")) {
		t.Fatalf("client status:\n%s", s)
	}
	m.Reset()
	out.Reset()
	ts.WriteMetrics(&m)
	if err := ops.WriteStatus(&out, &m); err != nil {
		t.Fatal(err)
	}
	s = out.String()
	t.Log("\n" + s)
	if !strings.HasPrefix(s, "ct-server: reserved 0 B") || !strings.Contains(s, "alice") || !strings.Contains(s, "1 forbidden") {
		t.Fatalf("server status:\n%s", s)
	}
	for _, bad := range []string{"not metrics {", "other_metric 1\n"} {
		if err := ops.WriteStatus(&out, strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
