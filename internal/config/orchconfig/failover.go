package orchconfig

import (
	"time"
)

// Failover is a placement's rule for a cluster that stops answering: a Workload whose
// cluster has not answered for After is placed again on another matching cluster, one that
// has answered without a break for HoldDown.
type Failover struct {
	// After is how long the Workload's cluster may go without answering the runtime's probe
	// before the Workload is placed elsewhere: a duration of at least MinFailoverAfter.
	After string `json:"after" yaml:"after"`
	// HoldDown is how long a cluster must have answered without a break to be chosen by a
	// failover: a cluster that has just come back (or keeps coming and going) receives no
	// Workload that fails over. A duration; absent: After.
	HoldDown string `json:"holdDown,omitempty" yaml:"holdDown,omitempty"`
}

// MinFailoverAfter is the shortest failover.after a config may set: two of the runtime's
// probe intervals (15 s), so a failover follows at least three probes in a row that got no
// answer, never one missed probe or a restarting API server. Tests lower it.
var MinFailoverAfter = 30 * time.Second

// Durations are the failover's after and hold-down, the hold-down's default applied; zero
// when f is nil or After does not parse (a config that loaded was validated).
func (f *Failover) Durations() (after, holdDown time.Duration) {
	if f == nil {
		return 0, 0
	}
	after, err := time.ParseDuration(f.After)
	if err != nil || after <= 0 {
		return 0, 0
	}
	holdDown = after
	if d, err := time.ParseDuration(f.HoldDown); err == nil && d >= 0 {
		holdDown = d
	}
	return after, holdDown
}

// FailsOver reports whether any backend of the config fails over: whether a cluster that
// starts or stops answering can change where Workloads belong.
func (c *Config) FailsOver() bool {
	if c == nil {
		return false
	}
	for _, p := range c.Profiles {
		for _, b := range p.Backends {
			if b.Placement != nil && b.Placement.Failover != nil {
				return true
			}
		}
	}
	return false
}

// failover checks a placement's failover: after a duration of at least MinFailoverAfter, the
// hold-down a duration that is not negative.
func (v *validator) failover(path string, f Failover) {
	switch after, err := time.ParseDuration(f.After); {
	case f.After == "":
		v.fail(path+".after", "a duration is required, such as 2m (without failover, a Workload waits for its cluster)")
	case err != nil:
		v.fail(path+".after", "%q must be a duration such as 2m", f.After)
	case after < MinFailoverAfter:
		v.fail(path+".after", "%s is shorter than %s: a cluster is probed every 15s, and one missed probe must not move Workloads", f.After, MinFailoverAfter)
	}
	if f.HoldDown == "" {
		return
	}
	if d, err := time.ParseDuration(f.HoldDown); err != nil || d < 0 {
		v.fail(path+".holdDown", "%q must be a duration such as 5m (0s: no hold-down)", f.HoldDown)
	}
}
