package agent

import (
	"net/http"
	"reflect"
	"testing"
	"testing/synctest"
)

// TestClientReload: Reload replaces the token and the apps' rule,
// priorities and pinned paths for what comes next; a policy that does not
// check (no token, a pin to no path) changes nothing.
func TestClientReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		before := *m.c.policy()
		for _, bad := range []ClientPolicy{
			{},
			{Token: testToken, AppPaths: map[string]string{"video": "nope"}},
		} {
			if err := m.c.Reload(bad); err == nil {
				t.Errorf("Reload(%+v) accepted", bad)
			}
			if got := *m.c.policy(); !reflect.DeepEqual(got, before) {
				t.Fatalf("a refused reload changed the policy: %+v", got)
			}
		}
		good := ClientPolicy{Token: testToken, AppRule: AppRule{Kind: "header", Header: "X-App"},
			Priority: map[string]int{"video": 3}, AppPaths: map[string]string{"video": memPath(1).Name}}
		if err := m.c.Reload(good); err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodGet, "http://"+memApp+"/", nil)
		r.Header.Set("X-App", "video")
		app := m.c.identify(r)
		if req := m.c.request(app); app != "video" || req.Priority != 3 || req.Pin != 2 {
			t.Fatalf("after reload: app %q, request %+v; want video, priority 3, pinned to path 1", app, req)
		}
	})
}
