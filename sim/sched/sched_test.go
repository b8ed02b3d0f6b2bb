package sched

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

type fakeQueue struct{ n int }

func (q fakeQueue) PendingAt(i int) int { return i }
func (q fakeQueue) AppendPending(dst []int, n int) []int {
	for i := range n {
		dst = append(dst, i)
	}
	return dst
}
func (q fakeQueue) IsPending(c int) bool      { return c >= 0 && c < q.n }
func (q fakeQueue) NotSentOn(int) (int, bool) { return 0, q.n > 0 }
func (q fakeQueue) StreamOf(c int) StreamInfo { return StreamInfo{Offset: c} }

func view(pending int, paths ...PathView) *View {
	for i := range paths {
		paths[i].ID = i
		if paths[i].Ssthresh == 0 {
			paths[i].Ssthresh = math.MaxInt
		}
	}
	return &View{Paths: paths, PacketBytes: 1500, Pending: pending, Queue: fakeQueue{pending}, SendWindow: 1 << 30}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestSchedulers(t *testing.T) {
	fastFull := PathView{SRTT: ms(20), Cwnd: 15000, InFlight: 15000}
	fastFree := PathView{SRTT: ms(20), Cwnd: 15000, InFlight: 0}
	slowFree := PathView{SRTT: ms(200), Cwnd: 15000, InFlight: 0}
	for _, c := range []struct {
		name  string
		sched string
		v     *View
		want  int
	}{
		{"minrtt picks the fastest with space", "minrtt", view(100, slowFree, fastFree), 1},
		{"minrtt falls back to the slow path", "minrtt", view(100, slowFree, fastFull), 0},
		{"nothing pending: wait", "minrtt", view(0, fastFree), Wait},
		{"rr starts after the last path", "rr", view(100, fastFree, slowFree), 1},
		{"blest waits for the fast path with a small send window", "blest", func() *View {
			v := view(100, fastFull, slowFree)
			v.SendWindow = 60000
			return v
		}(), Wait},
		{"ecf waits when little is pending", "ecf", view(2, fastFull, slowFree), Wait},
		{"ecf uses the slow path when much is pending", "ecf", view(10000, fastFull, slowFree), 1},
		{"single uses path 0 only", "single", view(100, fastFull, slowFree), Wait},
		{"late prefers the earlier arrival", "late", view(100, slowFree, fastFree), 1},
		{"weighted picks the heaviest", "weighted", view(100, PathView{Cwnd: 15000, Weight: 1}, PathView{Cwnd: 15000, Weight: 3}), 1},
	} {
		s, err := New(c.sched, len(c.v.Paths))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(c.v).Path; got != c.want {
			t.Errorf("%s: path %d, want %d", c.name, got, c.want)
		}
	}
	if _, err := New("fastest", 2); err == nil {
		t.Error("unknown scheduler accepted")
	}
}

func TestMAMSQ(t *testing.T) {
	m := NewMAMS()
	// Loss-free path, window 10 packets, τ = 20 ms, no queue (OWD 10 ms):
	// within 45 ms, rounds at 0 and 20 ms fit (T^C = OWD); the first
	// delivers its 10 packets, the second (CA: w+1 = 11) only the share sent
	// within 45 − 20 − 10 = 15 ms of its 20 ms: 11·0.75.
	p := &PathView{SRTT: ms(20), MinRTT: ms(20), RTO: ms(100), Cwnd: 15000, Ssthresh: 15000}
	if q := m.q(p, ms(45), 1500); math.Abs(q-(10+11*0.75)) > 1e-9 {
		t.Fatalf("q = %v, want 18.25", q)
	}
	// With loss the expectation shrinks, and the memo returns the same value.
	p.LossRate = 0.1
	q1 := m.q(p, ms(45), 1500)
	if q1 >= 18.25*0.9+1e-9 || q1 <= 0 {
		t.Fatalf("q with 10 %% loss = %v, want in (0, 16.4]", q1)
	}
	if q2 := m.q(p, ms(45), 1500); q2 != q1 {
		t.Fatalf("memoised q %v != %v", q2, q1)
	}
	// Budget below τ/2: nothing arrives.
	if q := m.q(p, ms(5), 1500); q != 0 {
		t.Fatalf("q within 5 ms = %v, want 0", q)
	}
}

// TestMAMSPlan: with a fast and a slow path, the slow path's first packet
// is placed after what the fast path delivers within the slow path's
// one-way delay (Algorithm 2).
func TestMAMSPlan(t *testing.T) {
	m := NewMAMS()
	fast := PathView{SRTT: ms(20), MinRTT: ms(20), RTO: ms(100), Cwnd: 15000, Ssthresh: 15000}
	slow := PathView{SRTT: ms(200), MinRTT: ms(200), RTO: ms(400), Cwnd: 15000, Ssthresh: 15000}
	v := view(1000, fast, slow)
	d := m.Next(v)
	if d.Path != 0 || d.Chunk != 0 {
		t.Fatalf("first decision %+v, want the fast path with chunk 0", d)
	}
	v.Paths[0].InFlight = v.Paths[0].Cwnd // fast path full
	d = m.Next(v)
	q := m.q(&fast, ms(100), 1500)
	if d.Path != 1 || d.Chunk != int(math.Round(q)) {
		t.Fatalf("slow path decision %+v, want path 1 with chunk %d (q_fast(OWD_slow) = %.1f)", d, int(math.Round(q)), q)
	}
}

func TestBinom(t *testing.T) {
	sum := 0.0
	for k := 0; k <= 20; k++ {
		sum += binom(20, k, 0.3)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Fatalf("binomial pmf sums to %v", sum)
	}
}

// TestRegistry: every registered scheduler is built fresh by New and
// reports its registry name; an unknown name is an error that lists them.
func TestRegistry(t *testing.T) {
	names := Names()
	if len(names) != len(registry) || !sort.StringsAreSorted(names) {
		t.Fatalf("Names() = %v", names)
	}
	for _, n := range names {
		a, err := New(n, 2)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(n, 2)
		if a.Name() != n {
			t.Errorf("New(%q).Name() = %q", n, a.Name())
		}
		if stateful := reflect.TypeOf(a).Elem().Size() > 0; stateful && a == b {
			t.Errorf("New(%q) shares one scheduler between connections", n)
		}
	}
	if _, err := New("nope", 2); err == nil || !strings.Contains(err.Error(), "minrtt") {
		t.Errorf("unknown scheduler: %v", err)
	}
}
