package pcm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/resume"
	"github.com/hetquic/hetquic/origin"
)

// versioned serves /obj: version v is origin's pattern shifted by v, with
// ETag "v<v>", so two versions differ in every byte and a splice shows.
type versioned struct{ v atomic.Int64 }

func (s *versioned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := s.v.Load()
	w.Header().Set("Etag", fmt.Sprintf(`"v%d"`, v))
	// ServeContent answers If-Range itself: 206 while the ETag matches,
	// the whole new version (200) once it does not.
	http.ServeContent(w, r, "", time.Time{}, &shifted{origin.Pattern{Size: 4 << 20}, v})
}

type shifted struct {
	origin.Pattern
	by int64
}

func (s *shifted) Read(b []byte) (int, error) {
	n, err := s.Pattern.Read(b)
	for i := range n {
		b[i] += byte(s.by)
	}
	return n, err
}

// The resource is replaced while the download is cut off on its path: the
// resume on another path must not append the new version's bytes to the
// old one's. With the version unchanged the same failover completes intact.
// In fake time on the in-memory network: the stall timeout costs nothing.
func TestResumeRefusesAReplacedResource(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obj := &versioned{}
				n := memnet.New()
				c := memDialHandler(t, n, 2, Config{}, obj)
				ctx := context.Background()
				for _, p := range []int{1, 0} { // path 1 validated for the failover
					if _, err := c.GetOn(ctx, p, "/obj", nil); err != nil {
						t.Fatal(err)
					}
				}
				body := &cutWriter{after: 1 << 20, cut: func() {
					if replace {
						obj.v.Store(1)
					}
					n.SetDrop(memPath(0), true)
				}}
				res, err := c.GetOn(ctx, 0, "/obj", body)
				got := body.buf.Bytes()
				for i, b := range got { // whatever was delivered is version 0, byte for byte
					if b != origin.PatternByte(int64(i)) {
						t.Fatalf("byte %d of %d is %d, not version 0's %d: spliced", i, len(got), b, origin.PatternByte(int64(i)))
					}
				}
				if !replace {
					if err != nil || len(got) != 4<<20 || res.Failovers == 0 {
						t.Fatalf("unchanged resource: %d bytes, %d failovers, %v", len(got), res.Failovers, err)
					}
					return
				}
				if !errors.Is(err, resume.ErrChanged) {
					t.Fatalf("replaced resource: %d bytes, error %v; want resume.ErrChanged", len(got), err)
				}
				if len(got) >= 4<<20 {
					t.Fatalf("replaced resource delivered in full (%d bytes)", len(got))
				}
			})
		})
	}
}
