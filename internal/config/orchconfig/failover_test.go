package orchconfig

import (
	"strings"
	"testing"
	"time"
)

// failingOver is a valid placement on env=prod clusters with the given failover.
func failingOver(f *Failover) func(*Config) {
	return func(c *Config) {
		c.Profiles[0].Backends[0].Placement = &Placement{ClusterSelector: Selector{MatchLabels: map[string]string{"env": "prod"}}, Failover: f}
	}
}

func TestFailoverValidation(t *testing.T) {
	const path = "profiles[0].backends[0].placement.failover"
	cases := []struct {
		name     string
		mutate   func(*Config)
		wantPath string
		wantMsg  string
	}{
		{"after alone", failingOver(&Failover{After: "2m"}), "", ""},
		{"after and a hold-down", failingOver(&Failover{After: "30s", HoldDown: "10m"}), "", ""},
		{"no hold-down", failingOver(&Failover{After: "1m", HoldDown: "0s"}), "", ""},
		{"no after", failingOver(&Failover{HoldDown: "1m"}), path + ".after", "a duration is required"},
		{"after not a duration", failingOver(&Failover{After: "soon"}), path + ".after", "must be a duration"},
		{"after shorter than two probes", failingOver(&Failover{After: "10s"}), path + ".after", "shorter than 30s"},
		{"a negative after", failingOver(&Failover{After: "-1m"}), path + ".after", "shorter than"},
		{"a negative hold-down", failingOver(&Failover{After: "1m", HoldDown: "-1s"}), path + ".holdDown", "must be a duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.mutate(cfg)
			errs := Validate(cfg)
			if tc.wantPath == "" {
				if len(errs) > 0 {
					t.Fatalf("want no errors, got %v", errs)
				}
				if !cfg.FailsOver() {
					t.Fatal("FailsOver: false")
				}
				return
			}
			for _, e := range errs {
				if e.Path == tc.wantPath && strings.Contains(e.Message, tc.wantMsg) {
					return
				}
			}
			t.Fatalf("want an error at %s containing %q, got %v", tc.wantPath, tc.wantMsg, errs)
		})
	}
	if validConfig().FailsOver() {
		t.Fatal("a config without failover fails over")
	}
}

func TestFailoverDurations(t *testing.T) {
	for _, tc := range []struct {
		f               *Failover
		after, holdDown time.Duration
	}{
		{nil, 0, 0},
		{&Failover{After: "2m"}, 2 * time.Minute, 2 * time.Minute},
		{&Failover{After: "2m", HoldDown: "10m"}, 2 * time.Minute, 10 * time.Minute},
		{&Failover{After: "2m", HoldDown: "0s"}, 2 * time.Minute, 0},
		{&Failover{After: "x"}, 0, 0},
	} {
		if after, holdDown := tc.f.Durations(); after != tc.after || holdDown != tc.holdDown {
			t.Errorf("%+v: %s, %s; want %s, %s", tc.f, after, holdDown, tc.after, tc.holdDown)
		}
	}
}
