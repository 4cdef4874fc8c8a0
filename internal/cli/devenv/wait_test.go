package devenv

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

// Off a terminal, the progress is a line each time the Workloads' states change, and no
// carriage return: make dev's output may go to a log, where a "\r" only garbles it.
func TestWaitReadyWritesPlainLinesOffATerminal(t *testing.T) {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "hello", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(w).Build()
	var out bytes.Buffer
	err := WaitReady(context.Background(), c, "demo", 2500*time.Millisecond, &out)
	if err == nil {
		t.Fatal("a Workload with no status is not Ready")
	}
	if strings.Contains(out.String(), "\r") || strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), "0/1 Ready  hello=Pending") {
		t.Fatalf("progress over three polls of one state: %q", out.String())
	}
}

// The cluster scripts' own step lines are shown; what the programs they run print (kwokctl's
// JSON log lines) is not, however the writes are cut.
func TestStepLinesShowTheScriptsStepsOnly(t *testing.T) {
	var out bytes.Buffer
	s := &stepLines{out: &out}
	for _, chunk := range []string{"[cluster] creating clus", "ter dev\n{\"time\":\"now\",\"msg\":\"Cluster is creating\"}\n", "[cluster] ready\n{\"msg\":", "\"x\"}\n"} {
		if _, err := s.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "[cluster] creating cluster dev\n[cluster] ready\n" {
		t.Fatalf("shown: %q", out.String())
	}
}
