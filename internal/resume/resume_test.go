package resume

import (
	"errors"
	"net/http"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in     string
		ok     bool
		f, l   int64
		resume string
	}{
		{"bytes=0-", true, 0, -1, "bytes=0-"},
		{"bytes=10-19", true, 10, 19, "bytes=10-19"},
		{"bytes=-5", false, 0, 0, ""},
		{"bytes=1-2,4-5", false, 0, 0, ""},
		{"bytes=5-1", false, 0, 0, ""},
		{"items=1-2", false, 0, 0, ""},
		{"bytes=x-", false, 0, 0, ""},
	} {
		r, ok := ParseRange(c.in)
		if ok != c.ok || ok && (r.First != c.f || r.Last != c.l || r.String() != c.resume) {
			t.Errorf("%q: %+v %v", c.in, r, ok)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		want ContentRange
	}{
		{"bytes 100-199/1000", true, ContentRange{100, 199, 1000}},
		{"bytes 0-0/*", true, ContentRange{0, 0, -1}},
		{"bytes */1000", false, ContentRange{}},
		{"bytes 5-4/10", false, ContentRange{}},
		{"bytes 0-9/9", false, ContentRange{}}, // last beyond the total
		{"bytes 0-9", false, ContentRange{}},
		{"items 0-9/10", false, ContentRange{}},
	} {
		got, ok := ParseContentRange(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v %v, want %+v %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func resp(status int, length int64, h ...string) *http.Response {
	r := &http.Response{StatusCode: status, ContentLength: length, Header: http.Header{}}
	for i := 0; i+1 < len(h); i += 2 {
		r.Header.Set(h[i], h[i+1])
	}
	return r
}

// TestCheck pins the resume decision row by row: what may be appended to
// 400 bytes already delivered of a 1000-byte resource.
func TestCheck(t *testing.T) {
	tagged := State{Validator: `"v1"`, Total: 1000}
	bare := State{Total: 1000}
	for _, c := range []struct {
		name    string
		st      State
		resp    *http.Response
		skip    int64
		changed bool // ErrChanged
		fail    bool // any other refusal
	}{
		{"206 from the byte asked", tagged, resp(206, 600, "Content-Range", "bytes 400-999/1000", "Etag", `"v1"`), 0, false, false},
		{"206 without a validator of its own", tagged, resp(206, 600, "Content-Range", "bytes 400-999/1000"), 0, false, false},
		{"206 from the wrong byte", tagged, resp(206, 700, "Content-Range", "bytes 300-999/1000"), 0, false, true},
		{"206 without Content-Range", tagged, resp(206, 600), 0, false, true},
		{"206 of another length", tagged, resp(206, 800, "Content-Range", "bytes 400-1199/1200"), 0, true, false},
		{"206 of another version", tagged, resp(206, 600, "Content-Range", "bytes 400-999/1000", "Etag", `"v2"`), 0, true, false},
		{"200 after If-Range: a new version", tagged, resp(200, 1000, "Etag", `"v2"`), 0, true, false},
		{"200 ignoring Range, same length, no validator", bare, resp(200, 1000), 400, false, false},
		{"200 ignoring Range, other length", bare, resp(200, 900), 0, false, true},
		{"200 of unknown length", State{Total: -1}, resp(200, -1), 0, false, true},
		{"416", tagged, resp(416, 0), 0, false, true},
	} {
		skip, err := c.st.Check(c.resp, 400)
		switch {
		case c.changed && !errors.Is(err, ErrChanged):
			t.Errorf("%s: %v, want ErrChanged", c.name, err)
		case c.fail && (err == nil || errors.Is(err, ErrChanged)):
			t.Errorf("%s: %v, want a refusal", c.name, err)
		case !c.changed && !c.fail && (err != nil || skip != c.skip):
			t.Errorf("%s: skip %d, %v; want %d", c.name, skip, err, c.skip)
		}
	}
}

func TestStateAndPrepare(t *testing.T) {
	first := resp(200, 1000, "Etag", `"v1"`, "Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
	st := Start(first)
	if st.Validator != `"v1"` || st.Total != 1000 {
		t.Fatalf("state %+v", st)
	}
	if st := Start(resp(206, 10, "Content-Range", "bytes 0-9/50", "Etag", `W/"weak"`, "Last-Modified", "x")); st.Validator != "x" || st.Total != 50 {
		t.Fatalf("a weak ETag is no If-Range validator, the total comes from Content-Range: %+v", st)
	}
	if st := FromHeader(http.Header{"Content-Length": {"77"}}); st.Validator != "" || st.Total != 77 {
		t.Fatalf("from header: %+v", st)
	}
	h := http.Header{}
	st.Prepare(h, Range{First: 400, Last: -1})
	if h.Get("Range") != "bytes=400-" || h.Get("If-Range") != `"v1"` {
		t.Fatalf("prepared %v", h)
	}
	h = http.Header{}
	State{Total: 5}.Prepare(h, Range{First: 1, Last: 3})
	if h.Get("Range") != "bytes=1-3" || h.Get("If-Range") != "" {
		t.Fatalf("prepared without a validator: %v", h)
	}
}

// FuzzParse feeds arbitrary text to both parsers: nothing may panic, and
// what is accepted is well-formed and round-trips.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"bytes=0-", "bytes=5-9", "bytes 1-2/3", "bytes 0-0/*", "bytes=-5", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, ok := ParseRange(s); ok {
			if r.First < 0 || r.Last >= 0 && r.Last < r.First {
				t.Fatalf("range %+v", r)
			}
			if r2, ok := ParseRange(r.String()); !ok || r2 != r {
				t.Fatalf("range %+v does not round-trip", r)
			}
		}
		if cr, ok := ParseContentRange(s); ok {
			if cr.First < 0 || cr.Last < cr.First || cr.Total >= 0 && cr.Total <= cr.Last {
				t.Fatalf("content-range %+v", cr)
			}
		}
	})
}
