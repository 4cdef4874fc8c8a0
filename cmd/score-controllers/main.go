// Command score-controllers runs the Score Orchestrator's controllers: the orchestrator
// (Workloads into claims and plans, one abstract status), the provisioner (claims into
// provisioned dependencies) and the Kubernetes runtime (plans into applied objects and
// endpoints). --controllers chooses which run in this process, so they can be deployed
// together or apart. Run with -h for every flag.
package main

import (
	"os"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
)

func main() {
	os.Exit(controlplane.Run("score-controllers", os.Args[1:], os.Stderr))
}
