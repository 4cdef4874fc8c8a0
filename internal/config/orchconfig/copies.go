package orchconfig

import "strconv"

// PlacementAll places a Workload on every matching cluster (placement.clusters).
const PlacementAll = "All"

// MaxCopies is the most clusters a number in placement.clusters may ask for; All has no limit
// but the registered clusters.
const MaxCopies = 100

// Copies is how many clusters the placement runs each Workload on: n, or every matching
// cluster when all. A placement without clusters runs one copy; a nil placement none (the
// hub).
func (p *Placement) Copies() (n int, all bool) {
	if p == nil {
		return 0, false
	}
	switch p.Clusters {
	case "":
		return 1, false
	case PlacementAll:
		return 0, true
	}
	n, _ = strconv.Atoi(p.Clusters)
	return n, false
}

// Several reports whether the placement may run a Workload on more than one cluster.
func (p *Placement) Several() bool {
	n, all := p.Copies()
	return all || n > 1
}

// clusters checks placement.clusters: a whole number from 1 to MaxCopies, or All.
func (v *validator) clusters(path string, p Placement) {
	if p.Clusters == "" || p.Clusters == PlacementAll {
		return
	}
	if n, err := strconv.Atoi(p.Clusters); err != nil || n < 1 || n > MaxCopies || strconv.Itoa(n) != p.Clusters {
		v.fail(path+".clusters", "%q is not a number of clusters: use a whole number from 1 to %d, or All", p.Clusters, MaxCopies)
	}
}
