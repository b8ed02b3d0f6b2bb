package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// tunnelGet sends one GET of size bytes on an open tunnel to memApp and
// reads the whole answer.
func tunnelGet(conn net.Conn, br *bufio.Reader, size int) error {
	fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\n\r\n", size, memApp)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && n != int64(size) {
		err = fmt.Errorf("%d of %d bytes", n, size)
	}
	return err
}

// TestIdleTunnelsSurviveNewOnes: on fake time over memnet with ct-server's
// default limits, a device holds 64 idle tunnels (long-lived SSH, IMAP,
// push channels: each answered once, then quiet far past TunnelIdle) and
// then opens 256 more: none of the idle ones is reclaimed, and each still
// carries a request afterwards. The per-device tunnel limit is the memory
// budget (an idle tunnel reserves TunnelIdleCost), not a count of 32.
func TestIdleTunnelsSurviveNewOnes(t *testing.T) {
	const idle, fresh = 64, 256
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		if c := m.c.gate.Capacity(); c < idle+fresh {
			t.Fatalf("ct-server announced %d tunnel slots by default, want ≥ %d", c, idle+fresh)
		}
		type tun struct {
			conn net.Conn
			br   *bufio.Reader
		}
		open := func(i int) tun {
			conn, br := m.rawProxy(t)
			fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, memApp)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("tunnel %d: %v %v", i, resp, err)
			}
			return tun{conn, br}
		}
		var old []tun
		for i := range idle {
			tu := open(i)
			defer tu.conn.Close()
			if err := tunnelGet(tu.conn, tu.br, 1000); err != nil {
				t.Fatalf("idle tunnel %d: %v", i, err)
			}
			old = append(old, tu)
		}
		time.Sleep(10 * DefaultTunnelIdle) // they are idle now by any measure
		for i := range fresh {
			tu := open(idle + i)
			defer tu.conn.Close()
		}
		synctest.Wait()
		if n := m.c.gate.Reclaimed(); n != 0 {
			t.Fatalf("%d idle tunnels reclaimed while the budget allowed them", n)
		}
		for i, tu := range old {
			if err := tunnelGet(tu.conn, tu.br, 1000); err != nil {
				t.Fatalf("idle tunnel %d after %d new ones: %v", i, fresh, err)
			}
		}
	})
}

// TestConnWindowCoversServerBudget: ct-client's connection window is
// sized from ct-server's default per-client buffer limit, which it cannot
// import; the two must agree.
func TestConnWindowCoversServerBudget(t *testing.T) {
	if serverBufferBytes != server.DefaultLimits.MaxBufferBytes {
		t.Fatalf("serverBufferBytes %d, ct-server's default MaxBufferBytes %d", serverBufferBytes, server.DefaultLimits.MaxBufferBytes)
	}
}

// TestConnectBurstNoEOF: on fake time over memnet with ct-server's default
// limits, 300 apps' CONNECTs arrive at once, each then sends one GET on its
// tunnel. Every tunnel granted (200) carries its whole response: none is
// handed over and then closed (the reclaim race: a slot granted, ct-server's
// refusals waited out, the tunnel reclaimed as idle right after its 200).
// A refusal (429, 503) is allowed; a 200 and then EOF is not.
func TestConnectBurstNoEOF(t *testing.T) {
	const n, size = 300, 64 << 10
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		var wg sync.WaitGroup
		var granted, refused atomic.Int32
		errs := make(chan error, n)
		for i := range n {
			conn, br := m.rawProxy(t)
			defer conn.Close()
			wg.Go(func() {
				host := fmt.Sprintf("app%d.example:80", i) // an app each: one share each
				fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, host)
				resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
				if err != nil {
					errs <- fmt.Errorf("tunnel %d: no answer to CONNECT: %v", i, err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					refused.Add(1)
					return
				}
				granted.Add(1)
				if err := tunnelGet(conn, br, size); err != nil {
					errs <- fmt.Errorf("tunnel %d: 200 and then %v", i, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		t.Logf("%d tunnels granted, %d refused", granted.Load(), refused.Load())
		if granted.Load() < n/2 {
			t.Errorf("only %d of %d CONNECTs granted", granted.Load(), n)
		}
	})
}
