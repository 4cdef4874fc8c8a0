package main

// --members M: the Workloads run on M member clusters of their own (each its own API server,
// etcd and kwok nodes, its audit log counted like the hub's), registered on the hub as
// `scorectl cluster add` registers them, every backend placing on them (Spread). The hub keeps
// the claims, plans, exposures and the dependencies' objects.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/blackhole"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
)

// benchMember is one member cluster of the run.
type benchMember struct {
	name  string
	k     *simcluster.Cluster
	c     client.Client
	audit *auditLog
}

// memberPhase is what one member's API server took during a phase.
type memberPhase struct {
	Name string `json:"name"`
	phase
	// OursPerWorkload is our writes there per Workload of the run.
	OursPerWorkload float64 `json:"oursPerWorkload"`
}

// startMembers starts, grows and registers the members, and places every backend on them.
func (s *runState) startMembers(ctx context.Context, root, dir string, pods, volumes int) error {
	roles, err := registration.HubRoles(os.DirFS(root))
	if err != nil {
		return err
	}
	for i := range s.o.members {
		name := fmt.Sprintf("m%d", i+1)
		m := &benchMember{name: name, k: &simcluster.Cluster{Root: root, Dir: filepath.Join(dir, "members", name), Name: fmt.Sprintf("score-bench-%d-%s", os.Getpid(), name), Volumes: volumes, AuditWrites: true, Output: s.k.Output}}
		s.members = append(s.members, m)
		logf(s.log, "starting member cluster %s", name)
		if err := m.k.Up(); err != nil {
			return fmt.Errorf("member %s: %w", name, err)
		}
		path, err := m.k.AuditLog()
		if err != nil {
			return err
		}
		m.audit = &auditLog{path: path}
		cfg, err := restConfig(m.k.Kubeconfig())
		if err != nil {
			return err
		}
		if m.c, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
			return err
		}
		if _, err := grow(ctx, m.c, pods+16); err != nil {
			return err
		}
		reg := registration.Registration{Name: name, Namespace: devenv.SystemNamespace, Labels: map[string]string{"bench": "member"}, Roles: roles}
		if name == lostMember && s.o.failover > 0 {
			// Reached through a proxy that can go dark: the member --failover loses.
			if s.dark, reg.Server, err = blackhole.New(cfg.Host); err != nil {
				return err
			}
		}
		if _, err := registration.Register(ctx, cfg, s.c, reg); err != nil {
			return fmt.Errorf("registering member %s: %w", name, err)
		}
	}
	placement, policy := map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"bench": "member"}}}, "Spread"
	switch {
	case s.o.failover > 0:
		placement, policy = failoverPlacement(s.o.failover), fmt.Sprintf("Ordered, failover after %s", s.o.failover)
	case s.o.clusters > 1:
		placement, policy = copiesPlacement(s.o.clusters), fmt.Sprintf("Spread, a copy on %d of them", s.o.clusters)
	}
	n, err := devenv.PlaceBackends(ctx, s.c, "", placement)
	logf(s.log, "%d members registered; %d backends place on them (%s)", len(s.members), n, policy)
	return err
}

// membersSince counts each member's writes since the last call, for a phase of d seconds.
func (s *runState) membersSince(seconds float64) ([]memberPhase, error) {
	var out []memberPhase
	for _, m := range s.members {
		counts, err := countSince(m.audit, nil)
		if err != nil {
			return nil, err
		}
		sum := counts.summary()
		out = append(out, memberPhase{Name: m.name, phase: phase{Seconds: seconds, Writes: sum}, OursPerWorkload: float64(sum.Ours) / float64(s.o.n)})
	}
	return out, nil
}

// stopMembers stops the member clusters started, and the proxy to the one --failover loses.
func (s *runState) stopMembers() {
	if s.dark != nil {
		s.dark.Close()
	}
	for _, m := range s.members {
		_ = m.k.Down()
	}
}
