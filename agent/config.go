package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// ServerFile is the YAML configuration of "hetquic agent server" (see
// README "Configuration"). Flags given on the command line override it.
type ServerFile struct {
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

// ClientFile is the YAML configuration of "hetquic agent client".
type ClientFile struct {
	Server         string            `yaml:"server"`      // ct-server UDP host:port
	ServerName     string            `yaml:"server_name"` // TLS name (default: server's host)
	CA             string            `yaml:"ca"`          // PEM certificate to trust
	Token          string            `yaml:"token"`
	TokenFile      string            `yaml:"token_file"`
	Paths          []string          `yaml:"paths"`          // NAME=IP, one per interface
	ConnsPerPath   int               `yaml:"conns_per_path"` // QUIC connections per interface (default 1; see Lanes)
	Listen         []string          `yaml:"listen"`         // proxy listen addresses
	Socks          []string          `yaml:"socks"`          // SOCKS5 listen addresses (none by default)
	Scheduler      string            `yaml:"scheduler"`      // see pathchoice.SchedulerNames
	AppRule        string            `yaml:"app_rule"`       // host | port | header:NAME
	Priority       map[string]int    `yaml:"priority"`       // app → priority
	AppPaths       map[string]string `yaml:"app_paths"`      // app → path name it is pinned to
	StallTimeoutMS int64             `yaml:"stall_timeout_ms"`
	IdleTimeoutMS  int64             `yaml:"idle_timeout_ms"`
	Cache          *CacheFile        `yaml:"cache"`
	Metrics        string            `yaml:"metrics"`
	QlogDir        string            `yaml:"qlog_dir"`
}

// CacheFile configures the prefetch cache.
type CacheFile struct {
	Dir         string `yaml:"dir"`
	MaxBytes    int64  `yaml:"max_bytes"`
	DefaultTTLS int64  `yaml:"default_ttl_s"` // freshness of responses that state none (default 600)
}

// LoadServerFile reads and strictly decodes a server configuration.
func LoadServerFile(name string) (ServerFile, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return ServerFile{}, err
	}
	return ParseServerFile(name, data)
}

// ParseServerFile strictly decodes and checks a server configuration read
// from name.
func ParseServerFile(name string, data []byte) (ServerFile, error) {
	var f ServerFile
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

// LoadClientFile reads and strictly decodes a client configuration.
func LoadClientFile(name string) (ClientFile, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return ClientFile{}, err
	}
	return ParseClientFile(name, data)
}

// ParseClientFile strictly decodes and checks a client configuration read
// from name.
func ParseClientFile(name string, data []byte) (ClientFile, error) {
	var f ClientFile
	if err := yamlfile.Decode(name, data, &f); err != nil {
		return f, err
	}
	if f.ConnsPerPath < 0 || f.ConnsPerPath > MaxLanes {
		return f, fmt.Errorf("%s: conns_per_path %d: want 1 to %d", name, f.ConnsPerPath, MaxLanes)
	}
	if f.StallTimeoutMS < 0 || f.IdleTimeoutMS < 0 {
		return f, fmt.Errorf("%s: timeouts must be >= 0", name)
	}
	if f.Cache != nil && (f.Cache.Dir == "" || f.Cache.MaxBytes <= 0 || f.Cache.DefaultTTLS < 0) {
		return f, fmt.Errorf("%s: cache needs a dir and max_bytes > 0", name)
	}
	for app, p := range f.Priority {
		if p < 1 {
			return f, fmt.Errorf("%s: priority of %q must be >= 1", name, app)
		}
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
		tok, err := ReadTokenFile(name, warn)
		if err != nil {
			return nil, fmt.Errorf("tokens_dir: %w", err)
		}
		out = append(out, ClientAuth{ID: e.Name(), Token: tok})
	}
	return out, nil
}
