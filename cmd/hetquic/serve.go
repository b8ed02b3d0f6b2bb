package main

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
)

func init() {
	register(command{name: "serve", summary: "run an origin: HTTP/3 (plain quic-go, no PCM) and/or HTTP/1.1+h2c on TCP (--http): /bytes/{n}, /echo", run: runServe})
}

func runServe(ctx context.Context, args []string) error {
	fs := newFlagSet("serve", "serve [--listen ADDR] (--self-signed [--write-ca FILE] | --cert FILE --key FILE) [--http ADDR] [--log FILE]",
		`Serves HTTP/3 on a UDP address with plain quic-go, so that PCM-QUIC and the agent
are measured against a server that knows nothing of them, and with --http also
HTTP/1.1 and HTTP/2 (h2c, prior knowledge) on a TCP address, the kind of
app-server ct-server forwards to. With --http and no certificate flags only
the TCP listener runs. Both serve:
  GET  /bytes/{n}   n bytes (byte i = i mod 251), Range supported, n ≤ 1 GiB
  POST /echo        the request body back (≤ 64 MiB)
One access-log line per request: time, client address, method, path, status,
bytes, duration. Stops on Ctrl-C.`)
	listen := fs.String("listen", "127.0.0.1:4433", "UDP address to listen on")
	selfSigned := fs.Bool("self-signed", false, "make a throwaway certificate for localhost and 127.0.0.1")
	writeCA := fs.String("write-ca", "", "with --self-signed: write the certificate (PEM) here for clients' --ca")
	certFile := fs.String("cert", "", "certificate chain (PEM)")
	keyFile := fs.String("key", "", "private key (PEM)")
	logFile := fs.String("log", "-", "access log file, - for stdout, empty for none")
	httpAddr := fs.String("http", "", "also serve HTTP/1.1 and h2c on this TCP address (e.g. 127.0.0.1:8000)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	h3 := *selfSigned || *certFile != "" || *keyFile != "" || *httpAddr == ""
	var cert tls.Certificate
	switch {
	case !h3:
	case *selfSigned && *certFile == "" && *keyFile == "":
		host, _, _ := net.SplitHostPort(*listen)
		pair, err := selfsigned.New(host)
		if err != nil {
			return err
		}
		cert = pair.Cert
		if *writeCA != "" {
			data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
			if err := os.WriteFile(*writeCA, data, 0o644); err != nil {
				return err
			}
		}
	case !*selfSigned && *certFile != "" && *keyFile != "":
		var err error
		if cert, err = tls.LoadX509KeyPair(*certFile, *keyFile); err != nil {
			return badInput(fmt.Errorf("serve: certificate: %w", err))
		}
	default:
		return badInput(errors.New("serve: give either --self-signed or both --cert and --key"))
	}
	var log io.Writer
	switch *logFile {
	case "":
	case "-":
		log = os.Stdout
	default:
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		log = f
	}
	var stop []func() error
	defer func() {
		for _, f := range stop {
			f()
		}
	}()
	if *httpAddr != "" {
		l, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return badInput(fmt.Errorf("serve: --http %q: %w", *httpAddr, err))
		}
		hs := origin.ServeTCP(l, log)
		stop = append(stop, hs.Close)
		fmt.Fprintf(os.Stderr, "serving HTTP/1.1 and h2c on http://%s\n", l.Addr())
	}
	if h3 {
		addr, err := net.ResolveUDPAddr("udp", *listen)
		if err != nil {
			return badInput(fmt.Errorf("serve: --listen %q: %w", *listen, err))
		}
		udp, err := net.ListenUDP("udp", addr)
		if err != nil {
			return err
		}
		srv, err := origin.Serve(udp, origin.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Log: log})
		if err != nil {
			udp.Close()
			return err
		}
		stop = append(stop, srv.Close)
		fmt.Fprintf(os.Stderr, "serving HTTP/3 on %s\n", srv.Addr())
	}
	fmt.Fprintln(os.Stderr, "Ctrl-C stops")
	<-ctx.Done()
	return nil
}
