// Command corpus-note says, after make test, when the conformance corpus was not found: the
// tests that need it were skipped, and how to run them. It prints nothing when the corpus is
// there.
package main

import (
	"fmt"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

func main() {
	if _, err := conformance.Dir(); err != nil {
		fmt.Printf(`NOTE: %v.
These tests were skipped: the corpus round trip and fuzz seeds (internal/cli/scorefile), the corpus
provisioner files (internal/provisioners/provisioning), the acceptance page (internal/testing/acceptance), the API
server admitting every corpus file (test/integration), and score-k8s's default provisioners on
the simulated cluster (test/e2e TestScoreK8sDefaultProvisioners). Run them with
SCORE_CONFORMANCE_DIR=/path/to/conformance make test; CI (.ci/run) requires them.
`, err)
	}
}
