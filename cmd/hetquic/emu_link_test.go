package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

func TestParseLinkSpec(t *testing.T) {
	for spec, want := range map[string]scenario.Link{
		"delay=20ms,rate=10mbit,loss=1%,queue=50": {DelayMs: 20, RateMbps: 10, Loss: 0.01, QueuePackets: 50},
		"delay=1.5s,jitter=2,rate=500kbit":        {DelayMs: 1500, JitterMs: 2, RateMbps: 0.5},
		"rate=1gbit,loss=0.2":                     {RateMbps: 1000, Loss: 0.2},
		"rate=25":                                 {RateMbps: 25},
		"":                                        {},
	} {
		got, _, err := parseLinkSpec(spec, scenario.Link{})
		if err != nil || got != want {
			t.Errorf("parseLinkSpec(%q) = %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for spec, want := range map[string]string{
		"delay=-1ms":  "delay:",
		"delay=20 ms": "delay:",
		"rate=10mbps": `unit "mbps" is not kbit, mbit or gbit`,
		"rate=0":      "not a rate above 0",
		"loss=101%":   "not a loss between 0 and 100%",
		"loss=NaN":    "not a loss",
		"queue=0":     "not a number of packets",
		"dealy=3":     `unknown key "dealy"`,
		"delay":       "is not KEY=VALUE",
		"delay=90s":   "not a duration in [0, 60000 ms]",
	} {
		if _, _, err := parseLinkSpec(spec, scenario.Link{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseLinkSpec(%q): %v; want an error with %q", spec, err, want)
		}
	}
}

func FuzzParseLinkSpec(f *testing.F) {
	f.Add("delay=20ms,rate=10mbit,loss=1%,queue=50")
	f.Add("rate=1e3kbit,jitter=1h")
	f.Fuzz(func(t *testing.T, spec string) {
		l, _, err := parseLinkSpec(spec, scenario.Link{})
		if err == nil && (l.DelayMs < 0 || l.JitterMs < 0 || l.RateMbps < 0 || l.Loss < 0 || l.Loss > 1 || l.QueuePackets < 0) {
			t.Fatalf("parseLinkSpec(%q) = %+v", spec, l)
		}
	})
}

// The flags describe every path; --link one path each over them, named.
func TestInlineScenario(t *testing.T) {
	s, err := inlineScenario(linkFlags{delay: "20ms", rate: "10mbit"}, nil, 2)
	if err != nil || len(s.Paths) != 2 || s.Paths[1].Down.DelayMs != 20 || s.Paths[1].Up.RateMbps != 10 {
		t.Fatalf("flags: %+v %v", s, err)
	}
	s, err = inlineScenario(linkFlags{delay: "20ms"}, []string{"wifi:rate=50mbit", "delay=40ms,loss=1%"}, 2)
	if err != nil || s.Paths[0].Name != "wifi" || s.Paths[0].Down.DelayMs != 20 || s.Paths[0].Down.RateMbps != 50 ||
		s.Paths[1].Name != "p2" || s.Paths[1].Up.DelayMs != 40 || s.Paths[1].Up.Loss != 0.01 {
		t.Fatalf("links: %+v %v", s, err)
	}
	if _, err := inlineScenario(linkFlags{}, []string{"a:delay=1", "a:delay=2"}, 2); err == nil || !strings.Contains(err.Error(), "duplicate path name") {
		t.Fatalf("duplicate names: %v", err)
	}
}

// hetquic emu relay --delay … --rate … relays a datagram to the server and
// its answer back, with no scenario file (correctness only: no timing).
func TestEmuRelayWithoutFile(t *testing.T) {
	echo, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			echo.WriteTo(buf[:n], from)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, hetquicBin, "emu", "relay", "--delay", "5ms", "--rate", "10mbit", "--loss", "0%",
		"--queue", "64", "--server", echo.LocalAddr().String(), "--paths", "127.0.0.1", "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("relay's first line: %q %v", line, err)
	}
	// "hetquic emu: relaying cli on ADDR → SERVER, paths p1=127.0.0.1"
	f := strings.Fields(line)
	if len(f) < 6 || f[3] != "cli" {
		t.Fatalf("relay's first line: %q", line)
	}
	relay := f[5]
	c, err := net.Dial("udp", relay)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	for range 3 { // the loss is 0 %, but a first datagram may meet a not yet bound socket
		// A generous deadline: under load the answer may be late, but it must come.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("ping"))
		if n, err := c.Read(buf); err == nil {
			if got := string(buf[:n]); got != "ping" {
				t.Fatalf("echo %q", got)
			}
			return
		}
	}
	t.Fatal("no answer through the relay")
}
