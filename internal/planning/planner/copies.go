package planner

import (
	"strconv"
	"strings"
)

// The names of a Workload's copies on several clusters (placement.clusters): slot 0 keeps the
// names of a single copy (the plan and exposure named after the Workload, ClaimName's claims);
// slot N adds ".N". A Workload's name is a DNS label (no dot), and so is ClaimName's, so a
// copy's name is never the name of another Workload's object: Workload "web-eu-1" names
// "web-eu-1", "web-eu-1.1", ..., never "web.1".

// CopyName is the name of a copy's object: name for slot 0, name.slot otherwise.
func CopyName(name string, slot int) string {
	if slot == 0 {
		return name
	}
	return name + "." + strconv.Itoa(slot)
}

// CopySlot is the slot of a copy's object of base's named name: 0 for base itself, N for
// base.N (N without leading zeros); ok is false when name is not one of base's.
func CopySlot(base, name string) (slot int, ok bool) {
	if name == base {
		return 0, true
	}
	rest, found := strings.CutPrefix(name, base+".")
	if !found || rest == "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}
