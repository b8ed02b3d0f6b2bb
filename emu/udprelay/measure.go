package udprelay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing/fstest"
	"time"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// The fidelity measurements push real UDP through a relay on loopback and
// compare what comes out with what the scenario asked for. They back the
// numbers in emu/RESULTS.md ("hetquic emu measure").

// MeasureResult is one measurement.
type MeasureResult struct {
	Mode       string  `json:"mode"`
	Dir        string  `json:"dir,omitempty"`
	Sent       int     `json:"sent"`
	Received   int     `json:"received"`
	DurationS  float64 `json:"duration_s"`
	PacketsPS  float64 `json:"packets_per_s,omitempty"`
	Configured float64 `json:"configured,omitempty"` // delay ms, rate Mbit/s or loss probability
	Measured   float64 `json:"measured,omitempty"`
	// delay mode: error of the one-way delay (measured − configured), ms
	ErrP50Ms float64 `json:"err_p50_ms,omitempty"`
	ErrP99Ms float64 `json:"err_p99_ms,omitempty"`
	ErrMaxMs float64 `json:"err_max_ms,omitempty"`
	ErrMinMs float64 `json:"err_min_ms,omitempty"`
	// rate mode: measured/configured − 1
	RateErr float64 `json:"rate_err,omitempty"`
	// loss mode: the 99 % binomial interval of the loss count
	LossLo int  `json:"loss_lo,omitempty"`
	LossHi int  `json:"loss_hi,omitempty"`
	OK     bool `json:"ok"`
	// forward and baseline: CPU time (user + system, whole process: load
	// generator, sink and relay) per delivered packet, µs.
	CPUPerPacketUs float64 `json:"cpu_per_packet_us,omitempty"`
	// forward and baseline: whether the load generator sent with UDP GSO
	// and the sink read with GRO (see Load), and whether the relay was
	// allowed its offloads.
	LoadGSO      bool `json:"load_gso,omitempty"`
	RelayOffload bool `json:"relay_offload,omitempty"`
}

// Load is how MeasureForward's and MeasureBaseline's load generator and
// sink move datagrams, and what the relay may use.
type Load struct {
	// GSO makes the generator send runs of equal datagrams per message with
	// UDP GSO (as quic-go does under load) and the sink read with UDP GRO,
	// where the kernel allows. Without it they move one datagram per
	// message (sendmmsg/recvmmsg). Compare a relay run only with a baseline
	// of the same Load: GSO makes both sides far cheaper per datagram.
	GSO bool
	// NoOffload is the relay's Config.NoOffload.
	NoOffload bool
}

// MeasureDelay sends pps packets/s of size bytes for dur over one path with
// delayMs one-way (upstream) and reports the error of the one-way delay.
func MeasureDelay(ctx context.Context, delayMs float64, pps int, size int, dur time.Duration) (MeasureResult, error) {
	res := MeasureResult{Mode: "delay", Dir: "up", Configured: delayMs}
	s, err := oneLink(fmt.Sprintf("{delay_ms: %g}", delayMs))
	if err != nil {
		return res, err
	}
	var delays []time.Duration
	var mu sync.Mutex
	recv := func(p []byte, at time.Time) {
		sent := int64(binary.LittleEndian.Uint64(p))
		mu.Lock()
		delays = append(delays, time.Duration(at.UnixNano()-sent))
		mu.Unlock()
	}
	sent, elapsed, err := pushUp(ctx, s, pps, size, dur, recv)
	if err != nil {
		return res, err
	}
	res.Sent, res.Received, res.DurationS = sent, len(delays), elapsed.Seconds()
	if len(delays) == 0 {
		return res, errors.New("no packet arrived")
	}
	errs := stats.FloatsMs(delays)
	for i := range errs {
		errs[i] -= delayMs
	}
	slices.Sort(errs)
	res.ErrP50Ms, res.ErrP99Ms, res.ErrMaxMs, res.ErrMinMs = stats.Quantile(errs, 0.5), stats.Quantile(errs, 0.99), errs[len(errs)-1], errs[0]
	res.Measured = res.ErrP50Ms + delayMs
	res.PacketsPS = float64(len(delays)) / elapsed.Seconds()
	res.OK = math.Abs(res.ErrP50Ms) <= 0.5 && math.Abs(res.ErrP99Ms) <= 2 && res.ErrMinMs >= 0
	return res, nil
}

// MeasureRate offers 1.25× mbps of size-byte packets for dur over a path
// limited to mbps and reports the delivered payload rate.
func MeasureRate(ctx context.Context, mbps float64, size int, dur time.Duration) (MeasureResult, error) {
	res := MeasureResult{Mode: "rate", Dir: "up", Configured: mbps}
	// A queue of 20 ms (at least 50 packets) rides out the scheduling
	// hiccups of sender and relay, so the link stays saturated.
	q := max(50, int(mbps*1e6/8*0.020)/size)
	s, err := oneLink(fmt.Sprintf("{rate_mbps: %g, queue_packets: %d}", mbps, q))
	if err != nil {
		return res, err
	}
	var n atomic.Int64
	var first, last atomic.Int64
	recv := func(p []byte, at time.Time) {
		t := at.UnixNano()
		first.CompareAndSwap(0, t)
		last.Store(t)
		n.Add(1)
	}
	pps := int(math.Ceil(1.25 * mbps * 1e6 / 8 / float64(size)))
	sent, elapsed, err := pushUp(ctx, s, pps, size, dur, recv)
	if err != nil {
		return res, err
	}
	res.Sent, res.Received, res.DurationS = sent, int(n.Load()), elapsed.Seconds()
	if n.Load() < 2 {
		return res, errors.New("too few packets arrived")
	}
	// n-1 packets were serialised between the first and the last arrival.
	span := time.Duration(last.Load() - first.Load())
	res.Measured = float64(n.Load()-1) * float64(size) * 8 / span.Seconds() / 1e6
	res.RateErr = res.Measured/mbps - 1
	res.PacketsPS = float64(n.Load()) / elapsed.Seconds()
	res.OK = math.Abs(res.RateErr) <= 0.03
	return res, nil
}

// MeasureLoss sends count packets at pps over a path with Bernoulli loss p
// and checks the loss count against the 99 % binomial interval.
func MeasureLoss(ctx context.Context, p float64, pps, count int, seed uint64) (MeasureResult, error) {
	res := MeasureResult{Mode: "loss", Dir: "up", Configured: p}
	s, err := oneLink(fmt.Sprintf("{loss: %g}", p))
	if err != nil {
		return res, err
	}
	var n atomic.Int64
	dur := time.Duration(float64(count) / float64(pps) * float64(time.Second))
	sent, elapsed, err := pushUpSeed(ctx, s, pps, 200, dur, func([]byte, time.Time) { n.Add(1) }, seed)
	if err != nil {
		return res, err
	}
	res.Sent, res.Received, res.DurationS = sent, int(n.Load()), elapsed.Seconds()
	lost := sent - int(n.Load())
	res.Measured = float64(lost) / float64(sent)
	mu, sd := float64(sent)*p, math.Sqrt(float64(sent)*p*(1-p))
	// The normal approximation's interval; a count is never below zero.
	res.LossLo, res.LossHi = max(0, int(math.Floor(mu-2.576*sd))), int(math.Ceil(mu+2.576*sd))
	res.OK = lost >= res.LossLo && lost <= res.LossHi
	return res, nil
}

// MeasureForward blasts packets with no impairment through one path in dir
// for dur and reports the delivered packets per second.
func MeasureForward(ctx context.Context, dir emu.Dir, size int, dur time.Duration, load Load) (MeasureResult, error) {
	res := MeasureResult{Mode: "forward", Dir: dir.String(), RelayOffload: !load.NoOffload}
	s, err := oneLink("{}")
	if err != nil {
		return res, err
	}
	server, err := listenBig(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		return res, err
	}
	defer server.Close()
	cfg := loopbackConfig(s, server.LocalAddr().(*net.UDPAddr).AddrPort(), 1)
	cfg.NoOffload = load.NoOffload
	r, err := New(cfg)
	if err != nil {
		return res, err
	}
	defer r.Close()
	client, err := r.ListenPath(0)
	if err != nil {
		return res, err
	}
	defer client.Close()
	client.SetReadBuffer(8 << 20)
	client.SetWriteBuffer(8 << 20)

	src, dst, to := client, server, r.Addr()
	if dir == emu.Down {
		// Open the flow, learn its server-side address, then blast from
		// the server towards it.
		client.WriteToUDPAddrPort([]byte("hello"), r.Addr())
		server.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 2048)
		_, flowAddr, err := server.ReadFromUDPAddrPort(buf)
		if err != nil {
			return res, fmt.Errorf("open flow: %w", err)
		}
		server.SetReadDeadline(time.Time{})
		src, dst, to = server, client, flowAddr
	}
	cpu0 := cpuTime()
	sent, recv, elapsed, gso := blast(ctx, src, dst, to, size, dur, load.GSO)
	res.CPUPerPacketUs = float64(cpuTime()-cpu0) / 1e3 / float64(max(recv, 1))
	res.Sent, res.Received, res.DurationS, res.LoadGSO = sent, recv, elapsed.Seconds(), gso
	res.PacketsPS = float64(recv) / elapsed.Seconds()
	res.OK = res.PacketsPS >= 150e3
	return res, nil
}

func oneLink(up string) (*scenario.Scenario, error) {
	text := "name: measure\npaths:\n  - name: p\n    up: " + up + "\n"
	return scenario.Load(fstest.MapFS{"m.yaml": {Data: []byte(text)}}, "m.yaml")
}

func listenBig(a netip.AddrPort) (*net.UDPConn, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a))
	if err != nil {
		return nil, err
	}
	c.SetReadBuffer(8 << 20)
	c.SetWriteBuffer(8 << 20)
	return c, nil
}

func pushUp(ctx context.Context, s *scenario.Scenario, pps, size int, dur time.Duration, recv func([]byte, time.Time)) (int, time.Duration, error) {
	return pushUpSeed(ctx, s, pps, size, dur, recv, 1)
}

// pushUpSeed paces pps packets/s (each stamped with its send time) from path
// 0 through a relay for s to a sink that calls recv per packet.
func pushUpSeed(ctx context.Context, s *scenario.Scenario, pps, size int, dur time.Duration, recv func([]byte, time.Time), seed uint64) (int, time.Duration, error) {
	if size < 8 {
		size = 8
	}
	sink, err := listenBig(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		return 0, 0, err
	}
	defer sink.Close()
	r, err := Loopback(s, sink.LocalAddr().(*net.UDPAddr).AddrPort(), seed)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	client, err := r.ListenPath(0)
	if err != nil {
		return 0, 0, err
	}
	defer client.Close()
	client.SetWriteBuffer(8 << 20)
	// The sink takes the kernel's receive timestamp (SO_TIMESTAMPNS), so
	// the sink's own scheduling delay does not count as the relay's.
	if rc, err := sink.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		oob := make([]byte, 128)
		for {
			n, oobn, _, _, err := sink.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				return
			}
			recv(buf[:n], rxTime(oob[:oobn]))
		}
	}()
	msg := make([]byte, size)
	alarm := emu.SystemClock{}.NewWaiter()
	defer alarm.Close()
	gap := time.Second / time.Duration(pps)
	start := time.Now()
	sent := 0
	for next := start; next.Sub(start) < dur && ctx.Err() == nil; next = next.Add(gap) {
		for time.Until(next) > 0 {
			alarm.Set(next)
			alarm.Wait()
		}
		binary.LittleEndian.PutUint64(msg, uint64(time.Now().UnixNano()))
		if _, err := client.WriteToUDPAddrPort(msg, r.Addr()); err == nil {
			sent++
		}
	}
	elapsed := time.Since(start)
	// Let the link drain: the largest delay plus a margin.
	time.Sleep(drainTime(s))
	sink.SetReadDeadline(time.Now())
	<-done
	return sent, elapsed, ctx.Err()
}

func drainTime(s *scenario.Scenario) time.Duration {
	d := 100 * time.Millisecond
	for _, p := range s.Paths {
		d += stats.DurationMs(p.Up.DelayMs + 10*p.Up.JitterMs)
		if p.Up.RateMbps > 0 { // a full queue
			q := p.Up.QueuePackets
			if q == 0 {
				q = emu.DefaultQueuePackets
			}
			d += time.Duration(float64(q*1500*8) / p.Up.RateMbps * 1e3)
		}
	}
	return d
}

// MeasureBaseline is MeasureForward's load generator and sink talking to each
// other directly, without the relay: the loopback's own packets/s on this
// machine, the ceiling for one hop (the relay adds a second hop).
func MeasureBaseline(ctx context.Context, size int, dur time.Duration, load Load) (MeasureResult, error) {
	res := MeasureResult{Mode: "baseline"}
	a, err := listenBig(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		return res, err
	}
	defer a.Close()
	b, err := listenBig(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		return res, err
	}
	defer b.Close()
	cpu0 := cpuTime()
	sent, recv, elapsed, gso := blast(ctx, a, b, b.LocalAddr().(*net.UDPAddr).AddrPort(), size, dur, load.GSO)
	res.CPUPerPacketUs = float64(cpuTime()-cpu0) / 1e3 / float64(max(recv, 1))
	res.Sent, res.Received, res.DurationS, res.LoadGSO = sent, recv, elapsed.Seconds(), gso
	res.PacketsPS = float64(recv) / elapsed.Seconds()
	res.OK = true
	return res, nil
}

// blast sends size-byte datagrams from src to "to" as fast as it can for dur
// and counts what dst receives. The load generator and the sink use
// sendmmsg/recvmmsg, so that they leave the relay as much CPU as they can;
// with gso (and where the kernel grants it, reported back) the generator
// puts a GSO run of datagrams in each message and the sink reads with GRO,
// counting the datagrams in each buffer.
func blast(ctx context.Context, src, dst *net.UDPConn, to netip.AddrPort, size int, dur time.Duration, gso bool) (sent, recv int, elapsed time.Duration, usedGSO bool) {
	if gso {
		sendOK, _ := offloads(src)
		_, recvOK := offloads(dst)
		gso = sendOK && recvOK
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		dstB := newBatchConn(dst)
		ms, bufSize := newMessages(batchSize), 2048
		if gso {
			ms, bufSize = newMessages(groBatch), groBufSize
		}
		for i := range ms {
			ms[i].Buffers[0] = make([]byte, bufSize)
			if gso {
				ms[i].OOB = make([]byte, groCmsgLen)
			}
		}
		for {
			k, err := dstB.ReadBatch(ms, 0)
			if err != nil {
				return
			}
			if !gso {
				n.Add(int64(k))
				continue
			}
			for _, m := range ms[:k] {
				if seg := groSegment(m.OOB[:m.NN]); seg > 0 {
					n.Add(int64((m.N + seg - 1) / seg))
				} else {
					n.Add(1)
				}
			}
		}
	}()
	srcB := newBatchConn(src)
	out, per := newMessages(batchSize), 1
	if gso {
		out, per = newMessages(groBatch), min(maxSegments, maxGSOBytes/size)
	}
	toUDP := net.UDPAddrFromAddrPort(to)
	for i := range out {
		out[i].Buffers[0] = make([]byte, size*per)
		out[i].Addr = toUDP
		if gso {
			out[i].OOB = putSegmentCmsg(make([]byte, segmentCmsgLen), size)
		}
	}
	start := time.Now()
	for time.Since(start) < dur && ctx.Err() == nil {
		k, err := srcB.WriteBatch(out, 0)
		if err != nil {
			continue
		}
		sent += k * per
	}
	elapsed = time.Since(start)
	time.Sleep(50 * time.Millisecond)
	dst.SetReadDeadline(time.Now())
	<-done
	dst.SetReadDeadline(time.Time{})
	return sent, int(n.Load()), elapsed, gso
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rxTime is the kernel's receive timestamp in oob (SCM_TIMESTAMPNS), or now.
func rxTime(oob []byte) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				sec := int64(binary.LittleEndian.Uint64(m.Data[0:8]))
				nsec := int64(binary.LittleEndian.Uint64(m.Data[8:16]))
				return time.Unix(sec, nsec)
			}
		}
	}
	return time.Now()
}
