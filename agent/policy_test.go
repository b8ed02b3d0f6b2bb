package agent

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// TestReload: a reload revokes a token without dropping its client's
// connection (its requests go on; its next hello is refused), admits a
// new client, applies a new allow-list to the next request, keeps a
// client's state and takes its new limits; a bad policy changes nothing.
func TestReload(t *testing.T) {
	up := startUpstream(t)
	other := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	alice := startClient(t, ts, 1, true, nil)
	carol := testToken + "-carol"
	err := ts.Reload(server.Policy{Clients: []server.ClientAuth{{ID: "carol", Token: carol}, {ID: "alice2", Token: testToken + "-x", Limits: &server.Limits{MaxStreams: 7}}},
		Allow: []string{up.hostport, other.hostport}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := alice.get(t, up.URL+"/bytes/10"); resp.StatusCode != 200 {
		t.Fatalf("revoked client's open connection: %d", resp.StatusCode)
	}
	if resp, _ := alice.get(t, other.URL+"/bytes/10"); resp.StatusCode != 200 {
		t.Fatalf("newly allowed upstream: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	again := startClient(t, ts, 1, false, nil)
	lastErr := func() string {
		again.paths[0].mu.Lock()
		defer again.paths[0].mu.Unlock()
		return again.paths[0].lastErr
	}
	waitFor(t, func() bool { return lastErr() != "" }, "the revoked token's hello answered")
	if why := lastErr(); again.Ready() != 0 || !strings.Contains(why, "unknown token") {
		t.Fatalf("revoked token at its next hello: ready %d, %q", again.Ready(), why)
	}
	c := startClient(t, ts, 1, false, func(c *ClientConfig) { c.Token = carol })
	if err := c.WaitReady(ctx, 1); err != nil {
		t.Fatalf("new client: %v", err)
	}
	// A client that stays keeps its state (carol's connection, which a new
	// state would not count) and takes its new limits.
	if err := ts.Reload(server.Policy{Clients: []server.ClientAuth{{ID: "carol", Token: carol, Limits: &server.Limits{MaxStreams: 3}}}, Allow: []string{up.hostport}}); err != nil {
		t.Fatal(err)
	}
	if cu := ts.Usage().Clients[0]; cu.Limits.MaxStreams != 3 || cu.Conns != 1 {
		t.Fatalf("carol's state replaced (%d conns) or limits not taken: %+v", cu.Conns, cu.Limits)
	}
	if resp, _ := alice.get(t, other.URL+"/bytes/10"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("upstream removed from the allow-list: %d", resp.StatusCode)
	}
	for _, bad := range []server.Policy{
		{Clients: []server.ClientAuth{{ID: "weak", Token: "passwordpassword"}}, Allow: []string{up.hostport}},
		{Allow: []string{up.hostport}},
		{Clients: []server.ClientAuth{{ID: "alice", Token: testToken}}, Allow: []string{up.hostport}, AllowInternal: []string{"10.0.0.1/8"}},
	} {
		if err := ts.Reload(bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	if resp, _ := alice.get(t, up.URL+"/bytes/10"); resp.StatusCode != 200 {
		t.Fatalf("after refused reloads: %d", resp.StatusCode)
	}
}
