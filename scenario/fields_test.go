package scenario

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// Every YAML field of Link and Event is a row of FieldTable (a new field
// must say how each backend treats it).
func TestFieldTableCoversEveryField(t *testing.T) {
	rows := map[string]bool{}
	for _, f := range FieldTable {
		for _, part := range strings.Split(strings.TrimPrefix(f.Name, "events[]."), ", ") {
			rows[part] = true
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Link](), reflect.TypeFor[Event]()} {
		for i := range typ.NumField() {
			tag := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "path" { // an event's target, not a property
				continue
			}
			if !rows[tag] {
				t.Errorf("%s.%s (%s) has no row in FieldTable", typ.Name(), typ.Field(i).Name, tag)
			}
		}
	}
}

func TestCheckNamesFieldAndBackend(t *testing.T) {
	sc, err := Parse(fstest.MapFS{}, "q.yaml", []byte("name: q\npaths:\n  - name: a\n    up: {delay_ms: 10}\n    down: {delay_ms: 10, reorder: true, jitter_ms: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = sc.Check(BackendOffline)
	if err == nil || !strings.Contains(err.Error(), "paths[0].down.reorder: the offline backend cannot model reorder") {
		t.Fatalf("offline: %v", err)
	}
	for _, b := range []string{BackendSim, BackendEmulator, BackendReal, BackendAgent} {
		if err := sc.Check(b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	if got := sc.Uses(); len(got) != 3 || got[0].Field != "delay_ms" || got[2].At != "paths[0].down.reorder" {
		t.Errorf("Uses = %v", got)
	}
}

func TestFieldsMarkdown(t *testing.T) {
	md := FieldsMarkdown()
	if !strings.HasPrefix(md, "| field | offline | real | emulator | agent | sim |\n|---|---|---|---|---|---|\n") {
		t.Fatalf("header: %q", md[:80])
	}
	if n := strings.Count(md, "\n"); n != len(FieldTable)+2 {
		t.Errorf("%d lines for %d fields", n, len(FieldTable))
	}
	if !strings.Contains(md, "| `loss_trace` | error: a per-packet drop sequence has no per-round equivalent | honoured | honoured | honoured | honoured |") {
		t.Errorf("queue row wrong:\n%s", md)
	}
}
