package agent

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/origin"
)

// outageCut is how long every path is down in TestOutageHold: the issue's
// 10 s, twice the old wait for a path (5 s) after which every download
// and tunnel was reset.
const outageCut = 10 * time.Second

// TestOutageHold: on fake time over memnet, every path of ct-client goes
// dead for 10 s while a download, a tunnel and a 4 MB upload are under
// way. Each waits out the outage (a stall, not a reset) and completes
// intact once the paths return: the download and the tunnel's response
// byte for byte, the upload as the app-server's sha256 of what it got.
func TestOutageHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, nil)
		for i := range 2 {
			m.n.SetLink(memPath(i).Addr, 1e6, 128<<10) // 1 MB/s each: every transfer is mid-way at the cut
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		const down, up = 3 << 20, 4 << 20
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		wg.Go(func() { errs <- outageDownload(m, down) })
		wg.Go(func() { errs <- outageTunnel(t, m, down) })
		wg.Go(func() { errs <- outageUpload(m, up) })
		time.Sleep(time.Second)
		for i := range 2 {
			m.n.SetDrop(memPath(i).Addr, true)
		}
		time.Sleep(outageCut)
		for i := range 2 {
			m.n.SetDrop(memPath(i).Addr, false)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

func outageDownload(m *memAgent, size int64) error {
	resp, err := m.hc.Get(fmt.Sprintf("http://%s/bytes/%d", memApp, size))
	if err != nil {
		return fmt.Errorf("download: %v", err)
	}
	defer resp.Body.Close()
	return intact("download", resp.Body, size)
}

// intact reads r to its end and checks it is the pattern's first size
// bytes.
func intact(what string, r io.Reader, size int64) error {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil || n != size || [32]byte(h.Sum(nil)) != patternSum(size) {
		return fmt.Errorf("%s across a %v cut of every path: %d of %d bytes, %v, intact %v", what, outageCut, n, size, err, [32]byte(h.Sum(nil)) == patternSum(size))
	}
	return nil
}

func outageTunnel(t *testing.T, m *memAgent, size int64) error {
	conn, br := m.rawProxy(t)
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", memApp, memApp)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tunnel: %v %v", resp, err)
	}
	fmt.Fprintf(conn, "GET /bytes/%d HTTP/1.1\r\nHost: %s\r\n\r\n", size, memApp)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("tunnel's response: %v", err)
	}
	defer resp.Body.Close()
	return intact("tunnel", bufio.NewReader(resp.Body), size)
}

func outageUpload(m *memAgent, size int64) error {
	req, err := http.NewRequest(http.MethodPost, "http://"+memApp+"/up", io.LimitReader(&origin.Pattern{Size: size}, size))
	if err != nil {
		return err
	}
	req.ContentLength = size
	resp, err := m.hc.Do(req)
	if err != nil {
		return fmt.Errorf("upload: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if want := fmt.Sprintf("%d %x", size, patternSum(size)); err != nil || resp.StatusCode != http.StatusOK || string(body) != want {
		return fmt.Errorf("upload across a %v cut of every path: %d %.80q %v, want 200 %q", outageCut, resp.StatusCode, body, err, want)
	}
	return nil
}

// TestOutageBeyondHold: the same cut outlasting a 3 s OutageHold: the
// download and the tunnel fail (the app sees an error, never a clean short
// end) once the hold is over, before any path returns, and ct-client
// counts the aborts.
func TestOutageBeyondHold(t *testing.T) {
	const hold = 3 * time.Second
	synctest.Test(t, func(t *testing.T) {
		m := startMemAgent(t, 2, nil, func(c *ClientConfig) { c.OutageHold = hold })
		for i := range 2 {
			m.n.SetLink(memPath(i).Addr, 1e6, 128<<10)
			m.n.SetDelay(memPath(i).Addr, 5*time.Millisecond)
		}
		const down = 3 << 20
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		ended := make(chan time.Time, 2)
		wg.Go(func() { errs <- outageDownload(m, down); ended <- time.Now() })
		wg.Go(func() { errs <- outageTunnel(t, m, down); ended <- time.Now() })
		time.Sleep(time.Second)
		cut := time.Now()
		for i := range 2 {
			m.n.SetDrop(memPath(i).Addr, true)
		}
		wg.Wait()
		for i := range 2 {
			m.n.SetDrop(memPath(i).Addr, false)
		}
		close(errs)
		close(ended)
		for err := range errs {
			if err == nil {
				t.Error("a transfer completed though every path was down past the hold")
			}
		}
		for at := range ended {
			if d := at.Sub(cut); d < hold || d > hold+5*time.Second {
				t.Errorf("a transfer ended %v after the cut; want after the %v hold and soon after it", d, hold)
			}
		}
		if m.c.aborts.Load() < 2 {
			t.Errorf("%d aborts counted, want the download's and the tunnel's", m.c.aborts.Load())
		}
	})
}
