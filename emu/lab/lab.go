// Package lab is the emulator's root front end: two network namespaces, a
// multi-homed client and a server, joined through an emu.Engine by TUN
// devices, so any IP traffic (ICMP, UDP, TCP, MPTCP) crosses the emulated
// paths of a scenario.
//
// For a lab named N and a scenario with paths p0, p1, …:
//
//	client netns hq-N-c                  this process             server netns hq-N-s
//	p0  TUN 10.200.1.2/24 ──read── Engine path 0 up   ──write──► p0 TUN 10.200.1.1/24
//	    ◄─────────────────write── Engine path 0 down ◄──read────
//	p1  TUN 10.200.2.2/24 ──read── Engine path 1 up   ──write──► p1 TUN 10.200.2.1/24
//	    ◄─────────────────write── Engine path 1 down ◄──read────
//	                                                             lo: 10.201.0.1/32 (ServerAddr)
//
// Every interface is a TUN device named after its path, one in each
// namespace; the process that runs the lab holds all their file
// descriptors and moves IP packets between the two ends of a path through
// that path's links of the engine, unchanged (no NAT). The path of a packet
// is the TUN it was read from: upstream, the client's routing picks the
// interface (source-based policy routing: `ip rule from 10.200.i.2 lookup
// 100+i`, whose table has `default dev pi`; unbound sockets use path 0, the
// main table's default route); downstream, the server routes each client
// subnet 10.200.i.0/24 out of its TUN i. The rate limiter counts whole IP
// packets (headers included).
//
// Nothing is created in the root namespace: the TUN devices, addresses,
// routes, rules and MPTCP endpoints all live in the two namespaces, so
// deleting them removes everything; the TUN devices are not persistent and
// vanish with the process. A lock file (/run/hetquic/lab-N.lock, flock'ed,
// released by the kernel if the process dies) keeps two live labs of one
// name apart, and Up first removes the leftovers of a crashed lab of the
// same name (its namespaces and the processes still running inside them).
package lab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultName is the lab name when none is given.
const DefaultName = "lab"

// DefaultMTU is the MTU of every lab interface; the engine's MaxPacket
// follows it, so a packet the kernel sends always fits.
const DefaultMTU = 1500

// MaxPaths bounds the paths of a lab (one /24 of 10.200.0.0/16 each).
const MaxPaths = 250

// ServerAddr is the server's address, reachable from the client over every
// path.
var ServerAddr = netip.AddrFrom4([4]byte{10, 201, 0, 1})

// ClientAddr is the client's address on path i (10.200.i+1.2).
func ClientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 200, byte(i + 1), 2}) }

// ServerPathAddr is the server end's address of path i (10.200.i+1.1).
func ServerPathAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 200, byte(i + 1), 1}) }

// routeTable is the client's policy routing table of path i.
func routeTable(i int) int { return 100 + i }

// ClientNS and ServerNS are the names of a lab's namespaces.
func ClientNS(name string) string { return "hq-" + name + "-c" }
func ServerNS(name string) string { return "hq-" + name + "-s" }

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_]{0,15}$`)
var ifnameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// ValidName checks a lab name: 1–16 of [a-z0-9_], starting with a letter or
// digit (no '-', so hq-NAME-c never collides with another lab's names).
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("lab name %q: want 1-16 characters of a-z, 0-9 and _", name)
	}
	return nil
}

// Config configures a lab.
type Config struct {
	Name     string             // DefaultName if empty
	Scenario *scenario.Scenario // required
	Seed     uint64
	Clock    emu.Clock    // nil: emu.SystemClock
	Log      emu.EventLog // optional per-packet log
	NoEvents bool         // do not run the scenario's timed events
	MTU      int          // 0: DefaultMTU
}

// Stats are the lab's own counters (the engine counts the rest).
type Stats struct {
	ReadErrors  uint64 `json:"read_errors"`
	WriteErrors uint64 `json:"write_errors"`
	// MPTCP is empty when the namespaces' MPTCP endpoints were set, else
	// why not (a kernel without MPTCP).
	MPTCP string `json:"mptcp,omitempty"`
}

// Lab is a running lab.
type Lab struct {
	cfg   Config
	name  string
	paths []string
	lock  *lock
	eng   *emu.Engine
	// tun[i][emu.Up] is path i's client-side TUN (read: upstream packets),
	// tun[i][emu.Down] its server-side TUN (read: downstream packets).
	tun [][2]*os.File

	readErrs, writeErrs atomic.Uint64
	mptcpErr            string

	closing sync.Once
	wg      sync.WaitGroup
	closeEr error
}

// Up builds the lab and starts moving packets; it runs until Close. On
// error nothing of it is left behind.
func Up(cfg Config) (*Lab, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if err := ValidName(cfg.Name); err != nil {
		return nil, err
	}
	if cfg.Scenario == nil {
		return nil, errors.New("lab: no scenario")
	}
	if cfg.MTU <= 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < 576 || cfg.MTU > 9000 {
		return nil, fmt.Errorf("lab: MTU %d: want 576..9000", cfg.MTU)
	}
	n := len(cfg.Scenario.Paths)
	if n == 0 || n > MaxPaths {
		return nil, fmt.Errorf("lab: %d paths: want 1..%d", n, MaxPaths)
	}
	paths := make([]string, n)
	for i, p := range cfg.Scenario.Paths {
		if !ifnameRE.MatchString(p.Name) || p.Name == "lo" || p.Name == "." || p.Name == ".." {
			return nil, fmt.Errorf("lab: paths[%d]: name %q is not usable as an interface name (1-15 of A-Z a-z 0-9 _ . -, not lo)", i, p.Name)
		}
		paths[i] = p.Name
	}
	if err := Available(); err != nil {
		return nil, err
	}
	lk, err := acquireLock(cfg.Name)
	if err != nil {
		return nil, err
	}
	l := &Lab{cfg: cfg, name: cfg.Name, paths: paths, lock: lk}
	if err := l.build(); err != nil {
		l.teardown()
		return nil, err
	}
	return l, nil
}

// Available reports why a lab cannot run here (not root, no ip command, no
// /dev/net/tun), or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("lab: needs root (network namespaces and TUN devices)")
	}
	if _, err := lookIP(); err != nil {
		return err
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("lab: no TUN support: %v", err)
	}
	return nil
}

// build creates the namespaces, devices, addresses, routes, rules and MPTCP
// endpoints, then the engine and the forwarding goroutines.
func (l *Lab) build() error {
	cns, sns := ClientNS(l.name), ServerNS(l.name)
	// Leftovers of a crashed lab of this name (we hold the lock, so no
	// live lab owns them).
	if err := cleanupNS(l.name); err != nil {
		return err
	}
	for _, ns := range []string{cns, sns} {
		if err := ip("netns", "add", ns); err != nil {
			return err
		}
		// No IPv6 (the lab is IPv4; this also keeps router solicitations
		// and MLD reports out of the counters) and no reverse-path filter
		// (replies may come back on a path that is not the main route's).
		sysctls := map[string]string{
			"net/ipv4/conf/all/rp_filter":     "0",
			"net/ipv4/conf/default/rp_filter": "0",
		}
		if _, err := os.Stat("/proc/sys/net/ipv6"); err == nil {
			sysctls["net/ipv6/conf/all/disable_ipv6"] = "1"
			sysctls["net/ipv6/conf/default/disable_ipv6"] = "1"
		}
		if err := writeSysctl(ns, sysctls); err != nil {
			return err
		}
	}
	l.tun = make([][2]*os.File, len(l.paths))
	for i, p := range l.paths {
		var err error
		if l.tun[i][emu.Up], err = openTUN(cns, p); err != nil {
			return err
		}
		if l.tun[i][emu.Down], err = openTUN(sns, p); err != nil {
			return err
		}
	}
	mtu := strconv.Itoa(l.cfg.MTU)
	var c, s []string // ip -batch lines for each namespace
	c = append(c, "link set lo up")
	s = append(s, "link set lo up", "address add "+ServerAddr.String()+"/32 dev lo")
	for i, p := range l.paths {
		ca, sa, tab := ClientAddr(i).String(), ServerPathAddr(i).String(), strconv.Itoa(routeTable(i))
		c = append(c,
			"link set dev "+p+" mtu "+mtu+" txqueuelen 1000 up",
			"address add "+ca+"/24 dev "+p,
			"route add default dev "+p+" src "+ca+" table "+tab,
			"rule add from "+ca+" lookup "+tab+" pref "+strconv.Itoa(1000+i),
		)
		if i == 0 {
			c = append(c, "route add default dev "+p+" src "+ca)
		}
		s = append(s,
			"link set dev "+p+" mtu "+mtu+" txqueuelen 1000 up",
			"address add "+sa+"/24 dev "+p,
		)
	}
	if err := ipBatch(cns, c); err != nil {
		return err
	}
	if err := ipBatch(sns, s); err != nil {
		return err
	}
	// MPTCP: every client address is a subflow endpoint, so a connection
	// started on any path opens subflows on the others (the in-kernel path
	// manager skips the address already in use). Limits are at most 8.
	lim := strconv.Itoa(min(8, len(l.paths)))
	mc := []string{"mptcp limits set subflows " + lim + " add_addr_accepted " + lim}
	for i, p := range l.paths {
		mc = append(mc, "mptcp endpoint add "+ClientAddr(i).String()+" dev "+p+" subflow")
	}
	err := ipBatch(cns, mc)
	if err == nil {
		err = ipBatch(sns, []string{"mptcp limits set subflows " + lim + " add_addr_accepted " + lim})
	}
	if err != nil {
		l.mptcpErr = err.Error() // a kernel without MPTCP: the rest works
	}

	l.eng, err = emu.New(emu.Config{
		Scenario: l.cfg.Scenario, Sink: emu.SinkFunc(l.deliver), Seed: l.cfg.Seed,
		Clock: l.cfg.Clock, Log: l.cfg.Log, MaxPacket: l.cfg.MTU, NoEvents: l.cfg.NoEvents,
	})
	if err != nil {
		return err
	}
	for i := range l.tun {
		for _, d := range []emu.Dir{emu.Up, emu.Down} {
			rc, err := l.tun[i][d].SyscallConn()
			if err != nil {
				return err
			}
			l.wg.Add(1)
			go l.forward(i, d, rc)
		}
	}
	return nil
}

// ipBatch runs ip commands inside ns, one exec for all of them.
func ipBatch(ns string, lines []string) error {
	bin, err := lookIP()
	if err != nil {
		return err
	}
	return runIPBatch(bin, ns, strings.Join(lines, "\n")+"\n")
}

// readBatch is how many packets one wake-up of a forwarder reads at most.
const readBatch = 32

// forward reads path i's packets of direction d from its TUN and hands them
// to the engine, a batch at a time, until the TUN is closed.
func (l *Lab) forward(i int, d emu.Dir, rc interface {
	Read(func(fd uintptr) bool) error
}) {
	defer l.wg.Done()
	pk := make([]*emu.Packet, 0, readBatch)
	for {
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			for len(pk) < readBatch {
				p := l.eng.NewPacket()
				n, err := unix.Read(int(fd), p.Data[:cap(p.Data)])
				if err != nil {
					l.eng.Free(p)
					if err == unix.EAGAIN {
						return len(pk) > 0 // wait for readability only if we got nothing
					}
					if err == unix.EINTR {
						continue
					}
					rerr = err
					return true
				}
				p.Data = p.Data[:n]
				pk = append(pk, p)
			}
			return true
		})
		if len(pk) > 0 {
			l.eng.Input(i, d, pk) // the engine owns the packets now
			clear(pk)
			pk = pk[:0]
		}
		if err != nil { // closed
			return
		}
		if rerr != nil {
			l.readErrs.Add(1)
			if errors.Is(rerr, unix.EBADFD) || errors.Is(rerr, unix.EBADF) {
				return
			}
			time.Sleep(time.Millisecond) // never spin on a persistent error
		}
	}
}

// deliver implements emu.Sink: a packet released by path's upstream link
// goes into the server end's TUN, one released downstream into the client
// end's; the kernel then receives it on that interface.
func (l *Lab) deliver(path int, dir emu.Dir, pkts []*emu.Packet) {
	f := l.tun[path][emu.Down]
	if dir == emu.Down {
		f = l.tun[path][emu.Up]
	}
	for _, p := range pkts {
		if _, err := f.Write(p.Data); err != nil {
			l.writeErrs.Add(1)
		}
	}
}

// Engine is the lab's emulator (Apply, Outage, Stats; serve its control API
// with emu.ControlHandler).
func (l *Lab) Engine() *emu.Engine { return l.eng }

// Paths are the interface names, in scenario path order.
func (l *Lab) Paths() []string { return append([]string(nil), l.paths...) }

// ClientNS and ServerNS are the lab's namespace names.
func (l *Lab) ClientNS() string { return ClientNS(l.name) }
func (l *Lab) ServerNS() string { return ServerNS(l.name) }

// InClient and InServer run f on a thread inside the client or server
// namespace: sockets f opens belong to it (they keep working afterwards, on
// any goroutine).
func (l *Lab) InClient(f func() error) error { return inNetns(l.ClientNS(), f) }
func (l *Lab) InServer(f func() error) error { return inNetns(l.ServerNS(), f) }

// Stats returns the lab's counters.
func (l *Lab) Stats() Stats {
	return Stats{ReadErrors: l.readErrs.Load(), WriteErrors: l.writeErrs.Load(), MPTCP: l.mptcpErr}
}

// Close stops forwarding, ends every goroutine, kills the processes still
// inside the namespaces, and deletes them (with every device, address,
// route, rule and endpoint in them). It is idempotent.
func (l *Lab) Close() error {
	l.closing.Do(func() { l.closeEr = l.teardown() })
	return l.closeEr
}

func (l *Lab) teardown() error {
	if l.eng != nil {
		l.eng.Close()
	}
	for _, t := range l.tun {
		for _, f := range t {
			if f != nil {
				f.Close() // ends the forwarder's Read; the device goes away
			}
		}
	}
	l.wg.Wait()
	err := cleanupNS(l.name)
	l.lock.release()
	return err
}

// cleanupNS deletes a lab's namespaces and the processes inside them.
func cleanupNS(name string) error {
	return errors.Join(delNetns(ClientNS(name)), delNetns(ServerNS(name)))
}

// Down stops the lab called name: if a live process runs it, that process
// is asked to stop (SIGTERM) and given a few seconds to clean up; then
// whatever is left (a crashed lab's namespaces and the processes inside) is
// removed. It reports whether anything was there.
func Down(name string) (bool, error) {
	if name == "" {
		name = DefaultName
	}
	if err := ValidName(name); err != nil {
		return false, err
	}
	if err := Available(); err != nil {
		return false, err
	}
	held, _ := lockHeld(name)
	found := held || nsExists(ClientNS(name)) || nsExists(ServerNS(name))
	if err := stopOwner(name, 10*time.Second); err != nil {
		return found, err
	}
	lk, err := acquireLock(name)
	if err != nil {
		return found, err
	}
	defer lk.release()
	return found, cleanupNS(name)
}

// Exists reports whether any namespace of the lab called name exists.
func Exists(name string) bool { return nsExists(ClientNS(name)) || nsExists(ServerNS(name)) }
