// Command score-chaos rolls out Workloads with dependencies on a simulated cluster of its own
// while it kills each controller process with SIGKILL at random moments, restarts the API
// server and etcd, and deletes Workloads mid-flight (with -members, on member clusters too:
// their API servers killed, one black-holed, Workloads moved); then it audits what the
// controllers left, on every cluster, and prints the counts. It exits 1 when the audit finds a problem.
//
//	make chaos N=300
//	make chaos N=30 MEMBERS=2
//	go run ./test/chaos/score-chaos -workloads 300 -kills 5 -window 4m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/test/chaos"
)

func main() {
	// The run's own clients log nothing; the controllers' logs are in the run's directory.
	log.SetLogger(logr.Discard())
	o := chaos.Options{Root: testenv.RepoRoot(), Progress: os.Stderr}
	flag.IntVar(&o.Workloads, "workloads", 300, "Workloads rolled out, each with dependencies")
	flag.IntVar(&o.Namespaces, "namespaces", 4, "namespaces they are spread over (one shared database each)")
	flag.IntVar(&o.Kills, "kills", 5, "SIGKILLs per controller process")
	flag.IntVar(&o.Members, "members", 0, "member clusters of their own part of the Workloads are placed on (their API servers killed, one black-holed, one relabelled so its Workloads move); the audit covers every cluster")
	flag.IntVar(&o.Deletions, "deletions", 20, "Workloads deleted during the run (Retain ones and shared consumers)")
	flag.DurationVar(&o.Window, "window", 4*time.Minute, "how long the faults go on; the Workloads arrive over its first half")
	flag.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "longest wait for every Workload to be Ready after the faults")
	flag.Uint64Var(&o.Seed, "seed", 0, "seed of the schedule (0: random)")
	flag.BoolVar(&o.SelfCheck, "self-check", false, "after the audit, plant an orphan and a duplicate (and an orphan on a member) and show the audit finds them")
	flag.BoolVar(&o.Keep, "keep", false, "leave the cluster running and its directory in place")
	flag.Parse()
	rep, err := chaos.Run(context.Background(), o)
	if rep != nil {
		fmt.Print(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "score-chaos:", err)
		os.Exit(2)
	}
	if len(rep.Problems()) > 0 {
		os.Exit(1)
	}
}
