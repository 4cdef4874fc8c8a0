package chaos_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/test/chaos"
)

// A small chaos run inside make test: 24 Workloads with dependencies rolled out while each
// controller process is killed three times, the API server and etcd are restarted once each
// and four Workloads are deleted mid-flight; afterwards every Workload is Ready, nothing
// exists twice or without an owner, no credential changed, the Retain claims kept their
// data, and the deleted Retain Workloads, created again, bind to it with the same
// credentials.
// make chaos N=300 runs the same code at scale.
func TestChaos(t *testing.T) {
	rep, err := chaos.Run(context.Background(), chaos.Options{
		Root: testenv.RepoRoot(), Workloads: 24, Namespaces: 2, Kills: 3, Deletions: 4,
		Window: time.Minute, Timeout: 4 * time.Minute, SelfCheck: true, Progress: os.Stderr,
	})
	if rep != nil {
		t.Logf("\n%s", rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.APIServerRestarts != 1 || rep.EtcdRestarts != 1 {
		t.Errorf("the API server restarted %d times and etcd %d times; want once each", rep.APIServerRestarts, rep.EtcdRestarts)
	}
	for name, n := range rep.Kills {
		if n < 3 {
			t.Errorf("%s was killed %d times; want 3", name, n)
		}
	}
	if rep.RetainedChecked == 0 || rep.SharedInstances == 0 || rep.CredentialsChecked < 20 || rep.Recreated == 0 {
		t.Errorf("the audit checked too little: %d retained claims, %d shared instances, %d outputs Secrets, %d re-created Workloads",
			rep.RetainedChecked, rep.SharedInstances, rep.CredentialsChecked, rep.Recreated)
	}
	for _, p := range rep.Problems() {
		t.Error(p)
	}
	// The audit can fail: an orphan and a duplicate planted after it are found.
	found := strings.Join(rep.PlantedFound, "\n")
	for _, want := range []string{"Secret chaos-0/planted-orphan: provisioned, and no claim lists it", "2 claims for chaos-0/", "claim chaos-0/planted-duplicate"} {
		if !strings.Contains(found, want) {
			t.Errorf("the audit missed a planted problem (%q) and found: %v", want, rep.PlantedFound)
		}
	}
}
