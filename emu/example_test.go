package emu_test

import (
	"fmt"
	"log"
	"time"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/scenario"
)

// The engine delays, drops and rate-limits packets as a scenario says; a
// front end (here a channel) gets them back when their link releases them.
func Example() {
	sc, err := scenario.Parse(nil, "two-paths.yaml", []byte(`
name: two-paths
paths:
  - {name: wifi, up: {delay_ms: 20}, down: {delay_ms: 20}}
  - {name: lte,  up: {delay_ms: 5, loss: 0.01}, down: {delay_ms: 5, rate_mbps: 50}}
`))
	if err != nil {
		log.Fatal(err)
	}
	released := make(chan time.Time, 1)
	e, err := emu.New(emu.Config{Scenario: sc, Seed: 1, Sink: emu.SinkFunc(func(path int, dir emu.Dir, pkts []*emu.Packet) {
		released <- time.Now()
	})})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	pkt := e.NewPacket()
	pkt.Data = append(pkt.Data[:0], "hello"...)
	sent := time.Now()
	e.Input(e.PathIndex("wifi"), emu.Up, []*emu.Packet{pkt})
	fmt.Println("delayed by at least 20 ms:", (<-released).Sub(sent) >= 20*time.Millisecond)
	// Output: delayed by at least 20 ms: true
}
