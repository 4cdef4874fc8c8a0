package dockerruntime

import (
	"testing"

	"github.com/docker/docker/api/types/container"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
)

func inspected(st container.State, labels map[string]string) container.InspectResponse {
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &st}, Config: &container.Config{Labels: labels}}
}

// A service is judged as Compose waits for it: running and healthy (when it has a
// healthcheck), or, once, completed; a service not created yet is waited for.
func TestServiceHealth(t *testing.T) {
	once, always := compose.Service{Restart: "no"}, compose.Service{Restart: "always"}
	for _, tc := range []struct {
		name    string
		s       compose.Service
		c       container.InspectResponse
		created bool
		want    string
	}{
		{"not created", always, container.InspectResponse{}, false, scorev1b1.HealthInProgress},
		{"running without a healthcheck", always, inspected(container.State{Running: true, Status: "running"}, nil), true, scorev1b1.HealthCurrent},
		{"healthcheck starting", always, inspected(container.State{Running: true, Status: "running", Health: &container.Health{Status: container.Starting}}, nil), true, scorev1b1.HealthInProgress},
		{"healthy", always, inspected(container.State{Running: true, Status: "running", Health: &container.Health{Status: container.Healthy}}, nil), true, scorev1b1.HealthCurrent},
		{"unhealthy", always, inspected(container.State{Running: true, Status: "running", Health: &container.Health{Status: container.Unhealthy}}, nil), true, scorev1b1.HealthFailed},
		{"a one-shot completed", once, inspected(container.State{Status: "exited"}, nil), true, scorev1b1.HealthCurrent},
		{"a one-shot failed", once, inspected(container.State{Status: "exited", ExitCode: 2}, nil), true, scorev1b1.HealthFailed},
		{"a server exited", always, inspected(container.State{Status: "exited"}, nil), true, scorev1b1.HealthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, msg := serviceHealth(tc.s, tc.c, tc.created); got != tc.want {
				t.Fatalf("%s (%s), want %s", got, msg, tc.want)
			}
		})
	}
}

// A service starts once what it depends on is as its condition asks, in the version the pass
// runs: an older version's health does not count.
func TestDependenciesMet(t *testing.T) {
	s := compose.Service{DependsOn: map[string]string{"db": compose.ServiceHealthy}}
	healthy := inspected(container.State{Running: true, Health: &container.Health{Status: container.Healthy}}, map[string]string{LabelHash: "new"})
	older := inspected(container.State{Running: true, Health: &container.Health{Status: container.Healthy}}, map[string]string{LabelHash: "old"})
	if dependenciesMet(s, map[string][]container.InspectResponse{"db": {older}}, map[string]string{"db": "new"}) {
		t.Fatal("an older version's health started its dependant")
	}
	if !dependenciesMet(s, map[string][]container.InspectResponse{"db": {healthy}}, map[string]string{"db": "new"}) {
		t.Fatal("a healthy dependency did not start its dependant")
	}
	done := compose.Service{DependsOn: map[string]string{"init": compose.ServiceCompletedSuccessfully}}
	failed := inspected(container.State{Status: "exited", ExitCode: 1}, map[string]string{LabelHash: "v"})
	if dependenciesMet(done, map[string][]container.InspectResponse{"init": {failed}}, map[string]string{"init": "v"}) {
		t.Fatal("a failed one-shot counted as completed")
	}
}
