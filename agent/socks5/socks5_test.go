package socks5

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
)

// TestReadSocksRequest: the request parser on every address type.
func TestReadSocksRequest(t *testing.T) {
	v6 := net.ParseIP("2001:db8::1")
	for _, c := range []struct {
		in   []byte
		want Request
		code byte // expected Error code, 0: none
	}{
		{[]byte{5, 1, 0, 1, 10, 0, 0, 1, 1, 187}, Request{1, "10.0.0.1:443"}, 0},
		{append(append([]byte{5, 1, 0, 4}, v6...), 0, 80), Request{1, "[2001:db8::1]:80"}, 0},
		{append([]byte{5, 1, 0, 3, 11}, "example.com\x00\x50"...), Request{1, "example.com:80"}, 0},
		{[]byte{5, 3, 0, 1, 0, 0, 0, 0, 0, 1}, Request{3, "0.0.0.0:1"}, 0},
		{[]byte{5, 1, 0, 3, 0, 0, 80}, Request{}, Failure},
		{[]byte{5, 3, 0, 1, 10, 0, 0, 1, 0, 0}, Request{3, "10.0.0.1:0"}, 0},
		{[]byte{5, 1, 1, 1, 10, 0, 0, 1, 0, 80}, Request{}, Failure},
		{[]byte{4, 1, 0, 1, 10, 0, 0, 1, 0, 80}, Request{}, Failure},
		{[]byte{5, 1, 0, 7}, Request{}, AtypUnsupported},
	} {
		got, err := ReadRequest(bytes.NewReader(c.in))
		var se *Error
		switch {
		case c.code != 0 && (!errors.As(err, &se) || se.Code != c.code):
			t.Errorf("% x: err %v, want code %d", c.in, err, c.code)
		case c.code == 0 && (err != nil || got != c.want):
			t.Errorf("% x: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
	if _, err := ReadRequest(bytes.NewReader([]byte{5, 1, 0, 1, 10})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
}
