package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/ops"
	"github.com/hetquic/hetquic/internal/yamlfile"
)

// File is the YAML configuration of "hetquic agent server" (see
// README "Configuration"). Flags given on the command line override it.
type File struct {
	Listen          string       `yaml:"listen"`            // UDP host:port
	Cert            string       `yaml:"cert"`              // PEM certificate chain
	Key             string       `yaml:"key"`               // PEM private key
	SelfSigned      bool         `yaml:"self_signed"`       // a self-signed certificate kept in state_dir
	StateDir        string       `yaml:"state_dir"`         // where the self-signed identity lives
	MemoryBudget    int64        `yaml:"memory_budget"`     // bytes all work may reserve (0: DefaultMemoryBudget)
	Allow           []string     `yaml:"allow"`             // upstream host:port allow-list
	AllowInternal   []string     `yaml:"allow_internal"`    // internal addresses/prefixes allowed names may resolve to (egress.go)
	Prefetch        []string     `yaml:"prefetch"`          // URLs pushed to clients that ask
	Limits          Limits       `yaml:"limits"`            // defaults per client
	Clients         []ClientAuth `yaml:"clients"`           // who may connect
	Token           string       `yaml:"token"`             // one more client, id "default"
	TokenFile       string       `yaml:"token_file"`        // like token, read from this file
	TokensDir       string       `yaml:"tokens_dir"`        // one client per file: name = id, content = token
	HeaderTimeoutMS int64        `yaml:"header_timeout_ms"` // default 10000
	Metrics         string       `yaml:"metrics"`           // host:port of /metrics ("" none)
	QlogDir         string       `yaml:"qlog_dir"`          // write qlog traces here ("" none)
}

// LoadFile reads and strictly decodes a server configuration.
func LoadFile(name string) (File, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return File{}, err
	}
	return ParseFile(name, data)
}

// ParseFile strictly decodes and checks a server configuration read
// from name.
func ParseFile(name string, data []byte) (File, error) {
	var f File
	if err := yamlfile.Decode(name, data, &f); err != nil {
		return f, err
	}
	for i, c := range f.Clients {
		if c.ID == "" || len(c.Token) < 16 {
			return f, fmt.Errorf("%s: clients[%d]: needs an id and a token of at least 16 characters", name, i)
		}
	}
	if f.HeaderTimeoutMS < 0 {
		return f, fmt.Errorf("%s: header_timeout_ms must be >= 0", name)
	}
	if f.MemoryBudget < 0 {
		return f, fmt.Errorf("%s: memory_budget must be >= 0", name)
	}
	if _, err := ParseAllowInternal(f.AllowInternal); err != nil {
		return f, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// ReadTokensDir reads one client per file of dir: the file's name is the
// client's id, its content the token (as "hetquic agent token" writes it).
// Names starting with "." are skipped (editors' and rsync's temporary
// files, Kubernetes' ..data links); symbolic links to files are followed.
// warn receives warnings about files others can read. Revoking a client
// is removing its file and reloading (SIGHUP).
func ReadTokensDir(dir string, warn func(string)) ([]ClientAuth, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tokens_dir: %w", err)
	}
	var out []ClientAuth
	for _, e := range ents {
		name := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if st, err := os.Stat(name); err != nil || !st.Mode().IsRegular() {
			continue
		}
		tok, err := identity.ReadTokenFile(name, warn)
		if err != nil {
			return nil, fmt.Errorf("tokens_dir: %w", err)
		}
		out = append(out, ClientAuth{ID: e.Name(), Token: tok})
	}
	return out, nil
}

// Authorized returns the clients f accepts: its clients list, one client
// "default" for token or token_file, and one per file of tokens_dir.
// warn receives warnings about token files others can read.
func (f File) Authorized(warn func(string)) ([]ClientAuth, error) {
	clients := append([]ClientAuth(nil), f.Clients...)
	tok := f.Token
	if f.TokenFile != "" {
		var err error
		if tok, err = identity.ReadTokenFile(f.TokenFile, warn); err != nil {
			return nil, err
		}
	}
	if tok != "" {
		clients = append(clients, ClientAuth{ID: "default", Token: tok})
	}
	if f.TokensDir != "" {
		dir, err := ReadTokensDir(f.TokensDir, warn)
		if err != nil {
			return nil, err
		}
		clients = append(clients, dir...)
	}
	if len(clients) == 0 {
		return nil, errors.New("agent server: no clients: give --token-file (make one with: hetquic agent token FILE), --tokens-dir, --token or clients in --config")
	}
	return clients, nil
}

// TLS returns ct-server's certificate: the self-signed identity kept in
// StateDir (certPEM is then the certificate for clients' --ca) or the
// Cert/Key pair.
func (f File) TLS(now time.Time, log *slog.Logger) (conf *tls.Config, certPEM []byte, err error) {
	switch {
	case f.SelfSigned:
		dir := f.StateDir
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, nil, errors.New("agent server: --self-signed needs --state-dir (no home directory)")
			}
			dir = filepath.Join(home, ".local", "state", "hetquic")
		}
		var names []string
		if host, _, err := net.SplitHostPort(f.Listen); err == nil && host != "" && host != "0.0.0.0" && host != "::" {
			names = append(names, host)
		}
		c, certPEM, created, err := identity.LoadOrCreateIdentity(dir, now, names...)
		if err != nil {
			return nil, nil, fmt.Errorf("agent server: %w", err)
		}
		if created {
			log.Warn("made a new self-signed certificate; clients need it as --ca", "state_dir", dir)
		} else {
			log.Info("reusing the self-signed certificate", "state_dir", dir)
		}
		return &tls.Config{Certificates: []tls.Certificate{c}}, certPEM, nil
	case f.Cert != "" && f.Key != "":
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("agent server: certificate: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{c}}, nil, nil
	}
	return nil, nil, errors.New("agent server: give --cert and --key, or --self-signed")
}

// Policy is what ct-server reloads on SIGHUP (Server.Reload): who may
// connect and where they may go, with the token files read again. warn
// receives warnings about token files others can read.
func (f File) Policy(warn func(string)) (Policy, error) {
	clients, err := f.Authorized(warn)
	if err != nil {
		return Policy{}, err
	}
	if len(f.Allow) == 0 {
		return Policy{}, errors.New("agent server: empty allow-list: give --allow or allow in --config (ct-server never forwards anywhere)")
	}
	return Policy{Clients: clients, Limits: f.Limits, Allow: f.Allow, AllowInternal: f.AllowInternal, Prefetch: f.Prefetch}, nil
}

// RestartOnly names the settings that differ between f and g and that a
// reload does not apply (they need a restart).
func (f File) RestartOnly(g File) []string {
	return ops.Changed([]ops.Setting{
		{Name: "listen", A: f.Listen, B: g.Listen}, {Name: "cert", A: f.Cert, B: g.Cert}, {Name: "key", A: f.Key, B: g.Key},
		{Name: "self_signed", A: f.SelfSigned, B: g.SelfSigned}, {Name: "state_dir", A: f.StateDir, B: g.StateDir},
		{Name: "memory_budget", A: f.MemoryBudget, B: g.MemoryBudget}, {Name: "header_timeout_ms", A: f.HeaderTimeoutMS, B: g.HeaderTimeoutMS},
		{Name: "metrics", A: f.Metrics, B: g.Metrics}, {Name: "qlog_dir", A: f.QlogDir, B: g.QlogDir},
	})
}
