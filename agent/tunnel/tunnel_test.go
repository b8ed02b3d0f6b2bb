package tunnel

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/wire"
)

// TestResumeAfterPathDies: the path under a tunnel dies with bytes in
// flight both ways; the tunnel resumes on the other path, asking for the
// down bytes from what the app got, and every byte arrives once, in
// order, both ways.
func TestResumeAfterPathDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		_, app, done := r.open(t, r.paths[0])
		b1, b2, b3 := pattern(200_000, 1), pattern(300_000, 2), pattern(100_000, 3)
		echo(t, app, b1)
		errc := make(chan error, 1)
		go func() { _, err := app.Write(b2); errc <- err }()
		got := make([]byte, len(b2))
		if _, err := io.ReadFull(app, got[:50_000]); err != nil {
			t.Fatal(err)
		}
		r.paths[0].cut()
		if _, err := io.ReadFull(app, got[50_000:]); err != nil || !bytes.Equal(got, b2) {
			t.Fatalf("echo across the cut: intact %v, %v", bytes.Equal(got, b2), err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		echo(t, app, b3)
		if up := r.ct.received(); !bytes.Equal(up, bytes.Join([][]byte{b1, b2, b3}, nil)) {
			t.Fatalf("ct-server received %d bytes up, want the app's %d once, in order", len(up), len(b1)+len(b2)+len(b3))
		}
		heads := r.ct.headsSeen()
		if len(heads) != 2 || heads[1].from != r.paths[1].addr {
			t.Fatalf("%d CONNECTs, want the new one and a resume on p1", len(heads))
		}
		down, err := strconv.Atoi(heads[1].h.Get(wire.HdrResumeDown))
		if err != nil || down < len(b1)+50_000 || down > len(b1)+len(b2) {
			t.Fatalf("resumed down from %q, want what the app had got (%d to %d)", heads[1].h.Get(wire.HdrResumeDown), len(b1)+50_000, len(b1)+len(b2))
		}
		if m, a, c0, c1 := r.host.moved.Load(), r.host.aborted.Load(), r.paths[0].carry.Load(), r.paths[1].carry.Load(); m != 1 || a != 0 || c0 != 0 || c1 != 1 {
			t.Fatalf("moved %d, aborted %d, carried by p0 %d and p1 %d; want 1, 0, 0, 1", m, a, c0, c1)
		}
		app.Close()
		<-done
		if c := r.paths[1].carry.Load(); c != 0 {
			t.Fatalf("p1 still counts %d tunnels after Run", c)
		}
	})
}

// TestFailbackToHome: a tunnel that a path failure moved off its home
// path moves back once home is usable again (after the client's failback
// hold), found by the look every FailbackEvery while it carries data, and
// not before; no byte is lost on either move.
func TestFailbackToHome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		_, app, done := r.open(t, r.paths[0])
		var sent []byte
		say := func(b []byte) { echo(t, app, b); sent = append(sent, b...) }
		say(pattern(10_000, 1))
		r.paths[0].cut()
		say(pattern(10_000, 2))
		// The path comes back, held for failbackHold.
		const failbackHold = 3 * time.Second
		r.paths[0].dial(t, failbackHold)
		back := time.Now().Add(failbackHold)
		// The app speaks every chunkEvery for 6 s: the tunnel carries data.
		const chunkEvery = 100 * time.Millisecond
		for i := range 60 {
			say(pattern(1000, byte(i)))
			time.Sleep(chunkEvery)
		}
		heads := r.ct.headsSeen()
		if len(heads) != 3 || heads[1].from != r.paths[1].addr || heads[2].from != r.paths[0].addr {
			t.Fatalf("%d CONNECTs, want new on p0, resume on p1, resume back on p0", len(heads))
		}
		// A look comes at most FailbackEvery plus one chunk's round after
		// home is usable; the resume then takes a one-way trip.
		if at, latest := heads[2].at, back.Add(FailbackEvery+chunkEvery+2*oneWay+oneWay); at.Before(back) || at.After(latest) {
			t.Fatalf("back home at %v after it came back, want between 0 and %v", at.Sub(back), latest.Sub(back))
		}
		if up := r.ct.received(); !bytes.Equal(up, sent) {
			t.Fatalf("ct-server received %d bytes up, want the app's %d once, in order", len(up), len(sent))
		}
		if m, c0, c1 := r.host.moved.Load(), r.paths[0].carry.Load(), r.paths[1].carry.Load(); m != 2 || c0 != 1 || c1 != 0 {
			t.Fatalf("moved %d, carried by p0 %d and p1 %d; want 2, 1, 0", m, c0, c1)
		}
		app.Close()
		<-done
	})
}

// TestResumeGivesUp: when a tunnel cannot resume, its app connection is
// closed (reset on TCP) and the client hears Aborted, whatever stopped
// it; with no path, or one that never answers, only after OutageHold.
func TestResumeGivesUp(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(r *rig)
		after time.Duration // the least time from the cut to the end
	}{
		{"no path left", func(r *rig) { r.paths[1].cut() }, outageHold},
		{"ct-server refuses the resume", func(r *rig) { r.ct.refuse = 403 }, 0},
		{"Ct-Resume-Up outside the replay buffer", func(r *rig) { r.ct.upAnswer = "999999999" }, 0},
		{"ct-server silent on the other path", func(r *rig) { r.n.SetDrop(r.paths[1].addr, true) }, outageHold},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				_, app, done := r.open(t, r.paths[0])
				echo(t, app, pattern(10_000, 1))
				c.setup(r)
				cut := time.Now()
				r.paths[0].cut()
				if n, err := app.Read(make([]byte, 1)); err == nil {
					t.Fatalf("the app read %d bytes, want its connection closed", n)
				}
				<-done
				if d := time.Since(cut); d < c.after {
					t.Fatalf("gave up %v after the cut, want at least %v", d, c.after)
				}
				if a, c0, c1 := r.host.aborted.Load(), r.paths[0].carry.Load(), r.paths[1].carry.Load(); a != 1 || c0 != 0 || c1 != 0 {
					t.Fatalf("aborted %d, carried by p0 %d and p1 %d; want 1, 0, 0", a, c0, c1)
				}
			})
		})
	}
}

// stubPath is a path without a connection, usable as told; looks counts
// the calls of Usable.
type stubPath struct {
	id     int
	usable bool
	looks  int
}

func (p *stubPath) ID() int                           { return p.id }
func (p *stubPath) Name() string                      { return "s" + strconv.Itoa(p.id) }
func (p *stubPath) Carry(int, int)                    {}
func (p *stubPath) Reader(str *quic.Stream) io.Reader { return str }
func (p *stubPath) Usable(time.Time) (*quic.Conn, bool) {
	p.looks++
	return nil, p.usable
}

// stubHost's Pick always answers picked.
type stubHost struct {
	fakeHost
	picked *stubPath
}

func (h *stubHost) Pick(context.Context, pathchoice.Request, map[int]bool) (Path, *quic.Conn, error) {
	return h.picked, nil, nil
}

// TestAttemptHomeFirst: a failback's first attempt goes to home when it
// is usable; every other attempt is the client's pick.
func TestAttemptHomeFirst(t *testing.T) {
	picked := &stubPath{id: 7}
	for _, c := range []struct {
		name   string
		home   *stubPath
		n      int
		wantID int
	}{
		{"a resume (no home)", nil, 0, 7},
		{"failback, home usable", &stubPath{id: 1, usable: true}, 0, 1},
		{"failback, home held", &stubPath{id: 1}, 0, 7},
		{"failback's second attempt", &stubPath{id: 1, usable: true}, 1, 7},
	} {
		tn := New(&stubHost{picked: picked}, "x:1", pathchoice.Request{}, nil)
		var home Path
		if c.home != nil {
			home = c.home
		}
		p, _, err := tn.attempt(context.Background(), c.n, home, map[int]bool{})
		if err != nil || p.ID() != c.wantID {
			t.Errorf("%s: path %v (%v), want %d", c.name, p, err, c.wantID)
		}
	}
}

// TestFailbackLooks: when a tunnel looks at its home path, and when it
// does not look at all. (Every row keeps the tunnel where it is: a move
// here, without a stream, would panic; the move itself is
// TestFailbackToHome's.)
func TestFailbackLooks(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	home, away := &stubPath{id: 0}, &stubPath{id: 1}
	for _, c := range []struct {
		name      string
		lookedAgo time.Duration
		home, cur *stubPath
		appEOF    bool
		looks     int  // calls of home.Usable
		newLook   bool // looked set to now
	}{
		{"looked less than FailbackEvery ago", FailbackEvery - time.Millisecond, home, away, false, 0, false},
		{"looked FailbackEvery ago, home held", FailbackEvery, home, away, false, 1, true},
		{"at home", time.Hour, home, home, false, 0, true},
		{"no home (not yet run)", time.Hour, nil, away, false, 0, true},
		{"the app finished sending", time.Hour, home, away, true, 0, true},
	} {
		home.looks = 0
		tn := New(&fakeHost{}, "x:1", pathchoice.Request{}, nil)
		tn.looked = now.Add(-c.lookedAgo)
		if c.home != nil {
			tn.home = c.home
		}
		tn.p, tn.appEOF = c.cur, c.appEOF
		tn.maybeFailback(0, now)
		if home.looks != c.looks || tn.looked.Equal(now) != c.newLook {
			t.Errorf("%s: home looked at %d times, look recorded %v; want %d, %v", c.name, home.looks, tn.looked.Equal(now), c.looks, c.newLook)
		}
	}
}

// TestOutageHoldResumes: with every path gone, a tunnel waits for one
// (OutageHold) and resumes, intact, on the first that comes back.
func TestOutageHoldResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		_, app, done := r.open(t, r.paths[0])
		b1, b2 := pattern(50_000, 1), pattern(50_000, 2)
		echo(t, app, b1)
		r.paths[1].cut()
		r.paths[0].cut()
		const outage = 3 * time.Second // within outageHold
		time.Sleep(outage)
		r.paths[1].dial(t, 0)
		echo(t, app, b2)
		if up := r.ct.received(); !bytes.Equal(up, append(b1, b2...)) {
			t.Fatalf("ct-server received %d bytes up, want the app's %d once, in order", len(up), len(b1)+len(b2))
		}
		if heads := r.ct.headsSeen(); len(heads) != 2 || heads[1].from != r.paths[1].addr || r.host.aborted.Load() != 0 {
			t.Fatalf("%d CONNECTs, aborted %d: want a resume on p1 once it came back", len(heads), r.host.aborted.Load())
		}
		app.Close()
		<-done
	})
}
