package provisioner

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
)

// pass is one pass over a claim: what claimdecision.From decides on, and what the pass's actions
// need of what was read.
type pass struct {
	claimdecision.Observed
	// id is the instance's identity, target where its objects go; set once a definition
	// serves the claim.
	id     provisioning.Identity
	target members.Target
	// state and data are the run's inputs: the instance's stored state, and what the run's
	// data is made of. Read only when the pass runs the provisioner.
	state instanceState
	data  provisioning.DataInput
	// ledger is the sharing ledger as read (nil when there is none yet), when Shares is set.
	ledger *corev1.ConfigMap
}

// observe makes the reads of a pass, in order, stopping where what follows can no longer
// change the outcome: the config (the revision the claim's instance follows) and the
// definition that serves the claim; then where its instance goes (observeInstance).
func (r *Reconciler) observe(ctx context.Context, c *scorev1b1.ResourceClaim) (*pass, error) {
	p := &pass{Observed: claimdecision.Observed{Claim: c.DeepCopy(), Now: metav1.NewTime(r.clock().Now()), CmdEnabled: r.EnableCmd, ProgressHold: r.ProgressHold}}
	loaded, err := r.configOf(ctx, c)
	switch {
	case errors.Is(err, errNotKept):
		p.RevisionNotKept = true
		return p, nil
	case err != nil:
		return nil, err
	case loaded == nil:
		p.NoConfig = true
		return p, nil
	}
	p.Revision = loaded.Revision
	claimParams, _ := values.Object(c.Spec.Params)
	served, message, ok := provisionermatch.Resolve(provisionermatch.Input{
		Classes: loaded.Config.Classes, Provisioners: loaded.Config.Provisioners,
		Claim: provisionermatch.Claim{Type: c.Spec.Type, Class: c.Spec.Class, ID: c.Spec.ID, Params: claimParams, RuntimeClass: c.Spec.RuntimeClass},
	})
	if !ok {
		p.Unserved = message
		return p, nil
	}
	def := loaded.Config.Provisioners[served.Index]
	p.Definition = &def
	if err := r.observeInstance(ctx, c, p, loaded, served); err != nil {
		return nil, err
	}
	return p, nil
}

// observeInstance reads where the claim's instance goes: its namespace's labels (the
// platform's sharing and host name rules), the member cluster and whether it answers; then,
// when the pass will run the provisioner, the instance's state and the Workloads its
// definition sees.
func (r *Reconciler) observeInstance(ctx context.Context, c *scorev1b1.ResourceClaim, p *pass, loaded *configsource.Loaded, served provisionermatch.Result) error {
	def := *p.Definition
	labels, err := r.namespaceLabels(ctx, c.Namespace)
	if err != nil {
		return err
	}
	p.InstanceNamespace, p.SharingDenied = claimdecision.InstanceNamespace(c, def.Sharing, labels)
	p.HostnameDenied = claimdecision.HostnameDenied(c, def, served.Params, loaded.Config, labels)
	if err := def.CheckParams(served.Params); err != nil {
		p.ParamsRefused = "The claim's " + err.Error() + "."
	}
	p.Cluster = instanceCluster(c, def)
	p.id = identityIn(c, p.InstanceNamespace, p.Cluster)
	p.Instance = p.id.Hash()
	p.MemberPending = p.Cluster != "" && r.members.Pending(ctx, p.Cluster)
	if !p.MemberPending {
		p.target, p.Unreachable = r.members.Target(p.Cluster, p.id.Namespace, r.applier)
	}
	p.PlatformPolicy = scorev1b1.DeprovisionPolicy(served.DeprovisionPolicy)
	if err := r.observeShares(ctx, c, p); err != nil {
		return err
	}
	if next := claimdecision.From(p.Observed).Next; next != claimdecision.Provision && next != claimdecision.Record {
		return nil // decided before a run: its inputs are not read
	}
	if p.state, err = r.loadState(ctx, p.id, readsShared(def)); err != nil {
		var owned *apply.OwnedElsewhere
		if errors.As(err, &owned) {
			// State the provisioner did not write, under the instance's name: refused as any
			// object no instance made, where the run would keep it.
			p.Run = &claimdecision.Run{Err: &provisioning.StepError{Step: provisioning.StepApply, Err: err}}
			return nil
		}
		return err
	}
	p.data, err = r.templateData(ctx, c, def, p.id, served.Class, served.Params, p.state)
	return err
}
