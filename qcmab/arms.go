package qcmab

import (
	"fmt"
	"slices"
	"strings"
)

// Arm is one QC-MAB action (§4.4.2): an access network and whether the
// server protects the frame with FEC.
type Arm struct {
	Network int // index into the agent's network names
	FEC     bool
}

// fecSuffix marks an FEC-on arm in an arm name: "wifi-3+fec".
const fecSuffix = "+fec"

// ArmName is the arm's name for the given networks: the network's name,
// with "+fec" when FEC is on.
func ArmName(a Arm, networks []string) string {
	if a.FEC {
		return networks[a.Network] + fecSuffix
	}
	return networks[a.Network]
}

// ParseArm reads an arm name ("NET" or "NET+fec") against the network
// names; an unknown network is a one-line error listing the known ones.
func ParseArm(name string, networks []string) (Arm, error) {
	net, fec := strings.CutSuffix(name, fecSuffix)
	i := slices.Index(networks, net)
	if i < 0 {
		return Arm{}, fmt.Errorf("qcmab: unknown arm %q (arms are NET or NET%s, NET one of %s)", name, fecSuffix, strings.Join(networks, ", "))
	}
	return Arm{Network: i, FEC: fec}, nil
}
