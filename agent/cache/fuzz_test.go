package cache

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzCacheMeta: a cache entry's metadata file found at start-up.
func FuzzCacheMeta(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Add([]byte(`{"url":"http://app/x","status":200,"header":{"Etag":["\"1\""]},"stored":"2025-12-31T23:00:00Z","expires":"2026-01-01T01:00:00Z","size":3}`), int64(3))
	f.Add([]byte(`{"url":"http://app/x","status":0,"expires":"2027-01-01T00:00:00Z","size":3}`), int64(3))
	f.Add([]byte(`{"url":`), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		var probe struct {
			URL string `json:"url"`
		}
		_ = json.Unmarshal(data, &probe) // the key the file would be stored under
		m, err := parseCacheMeta(keyOf(probe.URL), data, size, now)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if m.Status < 200 || m.Status > 299 || m.Size != size || !now.Before(m.Expires) {
			t.Fatalf("accepted %+v", m)
		}
	})
}
