package main

// --failover AFTER (with --members 2 or more): every backend places Ordered, with
// placement.failover.after AFTER, so all N run on the first member, m1, reached through a
// proxy that can go dark (internal/testing/blackhole). After the steady state m1 goes dark:
// the phase times the loss to all N Ready on another member, counts the writes on the hub and
// the members per moved Workload, holds m1 dark a moment, then lights it and times its clean-up
// (no plan holding anything on it), which ends the time both copies existed.

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// lostMember is the member --failover darkens.
const lostMember = "m1"

// failoverPhase is what --failover measured.
type failoverPhase struct {
	AfterSeconds float64 `json:"afterSeconds"`
	// Moved are the Workloads that failed over (all N).
	Moved int `json:"moved"`
	// Loss runs from m1 going dark to every Workload Ready on another member; LossMembers are
	// the members' writes in it.
	Loss        phase         `json:"loss"`
	LossMembers []memberPhase `json:"lossMembers"`
	// HeldSeconds is how long m1 stayed dark after all were Ready elsewhere.
	HeldSeconds float64 `json:"heldSeconds"`
	// Return runs from m1 lit again to no plan holding anything there; ReturnMembers are the
	// members' writes in it.
	Return        phase         `json:"return"`
	ReturnMembers []memberPhase `json:"returnMembers"`
	// NoticedSeconds is from m1 lit again to the runtime seeing it answer (its since in
	// score-clusters, to the second): the rest of Return is the clean-up itself.
	NoticedSeconds float64 `json:"noticedSeconds"`
	// CoexistenceSeconds is from all Ready elsewhere to m1 cleared: how long both copies existed.
	CoexistenceSeconds float64 `json:"coexistenceSeconds"`
	// DeploymentsLeft are our Deployments still on m1 after the clean-up (none expected).
	DeploymentsLeft int `json:"deploymentsLeft"`
}

// failoverPlacement is the placement --failover gives every backend.
func failoverPlacement(after time.Duration) map[string]any {
	return map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"bench": "member"}},
		"policy": "Ordered", "failover": map[string]any{"after": after.String()}}
}

// failover runs the phase: m1 dark, all N elsewhere, m1 lit and cleared.
func (s *runState) failover(ctx context.Context, held time.Duration) (*failoverPhase, error) {
	res := &failoverPhase{AfterSeconds: s.o.failover.Seconds()}
	onLost, err := s.placedOn(ctx, lostMember)
	if err != nil {
		return nil, err
	}
	if onLost != s.o.n {
		return nil, fmt.Errorf("%d of %d Workloads on %s before the failover", onLost, s.o.n, lostMember)
	}
	if _, err := s.auditSince(); err != nil {
		return nil, err
	}
	if _, err := s.membersSince(0); err != nil {
		return nil, err
	}
	logf(s.log, "failover: %s goes dark (failover after %s)", lostMember, s.o.failover)
	lost := time.Now()
	s.dark.SetDark(true)
	if err := poll(ctx, s.o.timeout, time.Second, func() (string, error) { return s.readyElsewhere(ctx) }); err != nil {
		return nil, err
	}
	moved := time.Now()
	res.Moved = s.o.n
	writes, err := s.auditSince()
	if err != nil {
		return nil, err
	}
	res.Loss = phaseOf(writes.summary(), moved.Sub(lost))
	if res.LossMembers, err = s.membersSince(moved.Sub(lost).Seconds()); err != nil {
		return nil, err
	}
	logf(s.log, "failover: all %d Ready elsewhere %.1fs after the loss; holding %s dark for %s", s.o.n, res.Loss.Seconds, lostMember, held)
	if err := sleep(ctx, held); err != nil {
		return nil, err
	}
	res.HeldSeconds = time.Since(moved).Seconds()
	if _, err := s.auditSince(); err != nil {
		return nil, err
	}
	if _, err := s.membersSince(0); err != nil {
		return nil, err
	}
	back := time.Now()
	s.dark.SetDark(false)
	if err := poll(ctx, s.o.timeout, 250*time.Millisecond, func() (string, error) { return s.holdingOn(ctx, lostMember) }); err != nil {
		return nil, err
	}
	cleared := time.Now()
	if writes, err = s.auditSince(); err != nil {
		return nil, err
	}
	res.Return = phaseOf(writes.summary(), cleared.Sub(back))
	if res.ReturnMembers, err = s.membersSince(cleared.Sub(back).Seconds()); err != nil {
		return nil, err
	}
	res.CoexistenceSeconds = cleared.Sub(moved).Seconds()
	if res.NoticedSeconds, err = s.answeringSince(ctx, lostMember, back); err != nil {
		return nil, err
	}
	var deployments appsv1.DeploymentList
	if err := s.members[0].c.List(ctx, &deployments, client.InNamespace(benchNS), client.HasLabels{scorev1b1.LabelWorkload}); err != nil {
		return nil, err
	}
	res.DeploymentsLeft = len(deployments.Items)
	logf(s.log, "failover: %s cleared %.1fs after it answered again (seen answering after %.0fs); both copies existed %.1fs", lostMember, res.Return.Seconds, res.NoticedSeconds, res.CoexistenceSeconds)
	return res, nil
}

// answeringSince is how long after back the runtime saw cluster answer again, by the since it
// published in score-clusters (whole seconds).
func (s *runState) answeringSince(ctx context.Context, cluster string, back time.Time) (float64, error) {
	cm := &corev1.ConfigMap{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: devenv.SystemNamespace, Name: clusters.StatusConfigMap}, cm); err != nil {
		return 0, err
	}
	st := clusters.Decode(cm)[cluster]
	if !st.Reachable || st.Since == nil {
		return 0, fmt.Errorf("cluster %s is not published as answering", cluster)
	}
	return st.Since.Sub(back.Truncate(time.Second)).Seconds(), nil
}

// placedOn counts the plans of the run placed on cluster.
func (s *runState) placedOn(ctx context.Context, cluster string) (int, error) {
	var plans scorev1b1.WorkloadPlanList
	if err := s.c.List(ctx, &plans, client.InNamespace(benchNS)); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range plans.Items {
		if p.Spec.Cluster == cluster {
			n++
		}
	}
	return n, nil
}

// readyElsewhere says what is still waiting for every Workload of the run to be Ready with its
// plan on a member other than m1; "" when none.
func (s *runState) readyElsewhere(ctx context.Context) (string, error) {
	if n, err := s.placedOn(ctx, lostMember); err != nil || n > 0 {
		return fmt.Sprintf("%d plans on %s", n, lostMember), err
	}
	var list scorev1b1.WorkloadList
	if err := s.c.List(ctx, &list, client.InNamespace(benchNS)); err != nil {
		return "", err
	}
	waiting := 0
	for _, w := range list.Items {
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			waiting++
		}
	}
	if waiting > 0 {
		return fmt.Sprintf("%d Workloads not Ready", waiting), nil
	}
	return "", nil
}

// holdingOn says how many plans of the run still hold objects on cluster; "" when none.
func (s *runState) holdingOn(ctx context.Context, cluster string) (string, error) {
	var plans scorev1b1.WorkloadPlanList
	if err := s.c.List(ctx, &plans, client.InNamespace(benchNS)); err != nil {
		return "", err
	}
	n := 0
	for _, p := range plans.Items {
		for _, c := range clusters.Of(p.Status.Objects) {
			if c == cluster {
				n++
			}
		}
	}
	if n > 0 {
		return fmt.Sprintf("%d plans hold objects on %s", n, cluster), nil
	}
	return "", nil
}
