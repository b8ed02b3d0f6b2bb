package emu

import (
	"math/rand/v2"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

func benchEngine(b *testing.B, up string) *Engine {
	s, err := scenario.Load(fstest.MapFS{"s.yaml": {Data: []byte("name: b\npaths:\n  - name: a\n    up: " + up + "\n")}}, "s.yaml")
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Scenario: s, Sink: SinkFunc(func(int, Dir, []*Packet) {})})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return e
}

// BenchmarkEngineInput is the engine's per-packet cost on the relay's path:
// NewPacket, Input, the Sink call and the recycling.
func BenchmarkEngineInput(b *testing.B) {
	for _, bc := range []struct{ name, up string }{
		{"none", "{}"},
		{"loss", "{loss: 0.01}"},
		{"rate", "{rate_mbps: 100000}"}, // never binds: measures the bookkeeping
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := benchEngine(b, bc.up)
			batch := make([]*Packet, 1)
			b.ReportAllocs()
			for b.Loop() {
				p := e.NewPacket()
				p.Data = p.Data[:1200]
				batch[0] = p
				e.Input(0, Up, batch)
			}
		})
	}
}

// BenchmarkLinkCore is the impairment model alone (delay + jitter + loss +
// rate), packets held and released.
func BenchmarkLinkCore(b *testing.B) {
	c := newLinkCore("a", Up, rand.New(rand.NewPCG(1, 2)), DefaultMaxPacket, nil)
	if err := c.configure(scenario.Link{DelayMs: 10, JitterMs: 1, Loss: 0.01, RateMbps: 1e4}, nil, 0); err != nil {
		b.Fatal(err)
	}
	p := &Packet{Data: make([]byte, 1200)}
	var out []*Packet
	b.ReportAllocs()
	var now int64
	for b.Loop() {
		now += 1000
		c.input(p, timeDur(now))
		out = c.popDue(timeDur(now), out[:0], func(*Packet) {})
	}
}

func timeDur(ns int64) (d time.Duration) { return time.Duration(ns) }
