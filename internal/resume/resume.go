// Package resume is the one place where hetquic decides whether the response
// to a resumed download (a Range request sent after a path failed part-way
// through a response) may be appended to the bytes already delivered.
//
// A resume is safe only if the server sends the same version of the resource
// from exactly the byte asked for. RFC 9110 §13.1.5 (If-Range) makes the
// server answer 200 with the whole new representation when the validator no
// longer matches; §14.4 (Content-Range) says where a 206's bytes start and
// how long the whole representation is. Check enforces both, so a resource
// replaced mid-download or a server that returns the wrong range fails the
// resume instead of splicing two versions into one body. The agent
// (ct-client) and the PCM client both use it.
package resume

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Range is a single "bytes=first-" or "bytes=first-last" range (Last < 0:
// to the end).
type Range struct{ First, Last int64 }

// ParseRange parses a Range header that can be resumed; ok is false for
// anything else (suffix ranges, several ranges, garbage).
func ParseRange(v string) (r Range, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return Range{}, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found || a == "" {
		return Range{}, false
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first < 0 {
		return Range{}, false
	}
	last := int64(-1)
	if b != "" {
		if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
			return Range{}, false
		}
	}
	return Range{first, last}, true
}

func (r Range) String() string {
	if r.Last < 0 {
		return "bytes=" + strconv.FormatInt(r.First, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(r.First, 10) + "-" + strconv.FormatInt(r.Last, 10)
}

// ContentRange is a parsed "bytes first-last/total" (Total < 0: "*").
type ContentRange struct{ First, Last, Total int64 }

// ParseContentRange parses a satisfied Content-Range (RFC 9110 §14.4).
func ParseContentRange(v string) (ContentRange, bool) {
	spec, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return ContentRange{}, false
	}
	rng, total, found := strings.Cut(spec, "/")
	if !found {
		return ContentRange{}, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return ContentRange{}, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return ContentRange{}, false
	}
	n := int64(-1)
	if total != "*" {
		var err error
		if n, err = strconv.ParseInt(total, 10, 64); err != nil || n <= last {
			return ContentRange{}, false
		}
	}
	return ContentRange{first, last, n}, true
}

// Validator returns the validator of a response for If-Range: its strong
// ETag, else its Last-Modified, else "" (a weak ETag may not be used in
// If-Range, RFC 9110 §13.1.5).
func Validator(h http.Header) string {
	if et := h.Get("Etag"); et != "" && !strings.HasPrefix(et, "W/") {
		return et
	}
	return h.Get("Last-Modified")
}

// State is what a download has to remember to resume: the validator and
// the total length of the version it started receiving.
type State struct {
	Validator string // "" when the server sent none
	Total     int64  // -1 when unknown
}

// FromHeader is the state of a download whose response head h has been
// delivered: its validator, and the total length from Content-Range (a
// 206) or else Content-Length.
func FromHeader(h http.Header) State {
	s := State{Validator: Validator(h), Total: -1}
	if cr, ok := ParseContentRange(h.Get("Content-Range")); ok {
		s.Total = cr.Total
	} else if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		s.Total = n
	}
	return s
}

// Start is the state of a download from its first response (whose
// Content-Length a client may have moved out of the header).
func Start(resp *http.Response) State {
	s := FromHeader(resp.Header)
	if s.Total < 0 && resp.StatusCode == http.StatusOK && resp.ContentLength >= 0 {
		s.Total = resp.ContentLength
	}
	return s
}

// Prepare asks for the bytes from r on in h: it sets Range and, when the
// state has a validator, If-Range.
func (s State) Prepare(h http.Header, r Range) {
	h.Set("Range", r.String())
	if s.Validator != "" && h.Get("If-Range") == "" {
		h.Set("If-Range", s.Validator)
	}
}

// ErrChanged reports that the resource is no longer the version whose
// first bytes were delivered: resuming would splice two versions.
var ErrChanged = errors.New("resume: the resource changed")

// Check decides whether resp, the answer to a request prepared by Prepare
// for bytes from start on, continues the download. It returns how many
// bytes of resp's body to drop before what is new (non-zero only for a
// server that ignored Range and sent the whole unchanged resource), or an
// error when resp must not be appended:
//   - a 206 whose Content-Range does not start at start, or whose total is
//     not the download's, or that carries a different strong validator;
//   - a 200 when a validator was sent (If-Range failed: a new version), or
//     when there is no validator and its length is not the download's total
//     (a server that ignored Range, but not with the same resource); a 200
//     with no validator and the same length is accepted: nothing better can
//     be known without a validator;
//   - any other status.
func (s State) Check(resp *http.Response, start int64) (skip int64, err error) {
	switch resp.StatusCode {
	case http.StatusPartialContent:
		cr, ok := ParseContentRange(resp.Header.Get("Content-Range"))
		switch {
		case !ok || cr.First != start:
			return 0, fmt.Errorf("resume: asked for byte %d, got Content-Range %q", start, resp.Header.Get("Content-Range"))
		case s.Total >= 0 && cr.Total >= 0 && cr.Total != s.Total:
			return 0, fmt.Errorf("%w: length %d, was %d", ErrChanged, cr.Total, s.Total)
		}
		if v := Validator(resp.Header); s.Validator != "" && v != "" && v != s.Validator {
			return 0, fmt.Errorf("%w: validator %s, was %s", ErrChanged, v, s.Validator)
		}
		return 0, nil
	case http.StatusOK:
		if s.Validator != "" {
			return 0, fmt.Errorf("%w (If-Range %s failed)", ErrChanged, s.Validator)
		}
		if s.Total < 0 || resp.ContentLength != s.Total {
			return 0, fmt.Errorf("resume: the server ignored Range and sent %d bytes of a %d-byte resource", resp.ContentLength, s.Total)
		}
		return start, nil
	}
	return 0, fmt.Errorf("resume: status %d", resp.StatusCode)
}
