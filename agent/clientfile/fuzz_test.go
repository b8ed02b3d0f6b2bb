package clientfile

import (
	"testing"

	"github.com/hetquic/hetquic/agent/wire"
)

// FuzzClientFile: ct-client's file; what Parse accepts is in range (seeds in
// testdata/fuzz/FuzzClientFile).
func FuzzClientFile(f *testing.F) {
	f.Add([]byte(sampleClientYAML))
	f.Add([]byte("conns_per_path: 9\n"))
	f.Add([]byte("cache: {dir: \"\", max_bytes: -1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := Parse("c.yaml", data)
		if err != nil {
			return
		}
		if cf.ConnsPerPath < 0 || cf.ConnsPerPath > wire.MaxLanes || cf.StallTimeoutMS < 0 || cf.IdleTimeoutMS < 0 {
			t.Fatalf("accepted %+v", cf)
		}
		if cf.Cache != nil && (cf.Cache.Dir == "" || cf.Cache.MaxBytes <= 0) {
			t.Fatalf("accepted cache %+v", cf.Cache)
		}
	})
}

const sampleClientYAML = `server: ct.example:4433
ca: ca.pem
token_file: token
paths: [wifi=192.168.1.23, lte=10.64.0.7]
conns_per_path: 2
listen: [127.0.0.1:8080]
scheduler: priority
app_rule: header:X-App
priority: {video: 1}
cache: {dir: /tmp/c, max_bytes: 1000}
`
