package ops

import (
	"net"
	"path/filepath"
	"testing"
)

// TestSdNotify: READY=1 arrives as one datagram on $NOTIFY_SOCKET, also
// in the abstract namespace; without the variable nothing is sent.
func TestSdNotify(t *testing.T) {
	for _, name := range []string{filepath.Join(t.TempDir(), "notify"), "@hetquic-test-notify-" + filepath.Base(t.TempDir())} {
		addr := name
		if name[0] == '@' {
			addr = "\x00" + name[1:]
		}
		l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("NOTIFY_SOCKET", name)
		if sent, err := SdNotify("READY=1"); !sent || err != nil {
			t.Fatalf("%s: sent %v, %v", name, sent, err)
		}
		buf := make([]byte, 64)
		n, err := l.Read(buf)
		l.Close()
		if err != nil || string(buf[:n]) != "READY=1" {
			t.Fatalf("%s: got %q, %v", name, buf[:n], err)
		}
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := SdNotify("READY=1"); sent || err != nil {
		t.Fatalf("without NOTIFY_SOCKET: sent %v, %v", sent, err)
	}
}
