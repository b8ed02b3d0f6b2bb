package agent

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/agent/server"
)

// memEcho is a TCP-like echo server on m's pipe network.
const memEcho = "10.6.0.7:7"

// echoBytes is what memEcho echoes before it closes.
const echoBytes = 128 << 10

// A finished tunnel's replay buffer stays reserved (the client's buffer
// limit, the server's memory budget) for server.SessionGrace, in case the stream
// with its last bytes fails, and is given back when the grace expires:
// nothing reserved after.
func TestTunnelGraceReservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 1, func(c *server.Config) { c.Allow = append(c.Allow, memEcho) }, nil)
		el := m.pn.listen(memEcho)
		defer el.Close()
		go func() {
			for {
				c, err := el.Accept()
				if err != nil {
					return
				}
				go func() { io.CopyN(c, c, echoBytes); c.Close() }() // then its end
			}
		}()
		conn, br := m.rawProxy(t)
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memEcho, memEcho)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		payload := bytes.Repeat([]byte("0123456789abcdef"), echoBytes/16)
		go conn.Write(payload)
		got := make([]byte, len(payload))
		if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("echo: %v", err)
		}
		if _, err := br.ReadByte(); err != io.EOF { // the upstream's end, passed on
			t.Fatalf("after the echo: %v, want its end", err)
		}
		conn.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		held := m.s.Usage().Reserved
		if held <= 0 || held > server.TunnelCost {
			t.Fatalf("finished tunnel: %d bytes reserved, want its replay buffer's (0 < n ≤ %d)", held, server.TunnelCost)
		}
		if n := m.s.Usage().Clients[0].Tunnels; n != 0 {
			t.Fatalf("finished tunnel still holds its slot (%d)", n)
		}
		time.Sleep(server.SessionGrace)
		synctest.Wait()
		if r := m.s.Usage().Reserved; r != 0 {
			t.Fatalf("%d bytes reserved after server.SessionGrace", r)
		}
		if n := m.s.Usage().Sessions; n != 0 {
			t.Fatalf("%d sessions after server.SessionGrace", n)
		}
	})
}
