package provisioner

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
)

// run is the pass's provisioning run: provisioning.Run, the one scorectl render makes too,
// with what only the cluster has — the state stored in Secrets, the applier of the instance's
// cluster, the Secrets outputs refer to, the command runner and the external APIs (env).
func (r *Reconciler) run(ctx context.Context, p *pass) *claimdecision.Run {
	env := r.env()
	st := p.state
	env.SaveState = func(ctx context.Context, res provisioning.Result) error { return r.saveState(ctx, p.id, &st, res) }
	env.Apply = func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (provisioning.Applied, error) {
		return r.place(ctx, p, objs, run, save)
	}
	get := r.secrets.Get
	if p.target.Member != nil {
		get = p.target.Member.Client.Get // a Secret an output refers to is the instance's, on its cluster
	}
	env.Secret = func(ctx context.Context, ref provisioning.SecretRef) (provisioning.ReferencedSecret, error) {
		return readReferencedSecret(ctx, get, p.id.Namespace, ref)
	}
	out, err := provisioning.Run(ctx, provisioning.RunInput{Definition: *p.Definition, Data: p.data}, env)
	return &claimdecision.Run{Outcome: out, Err: err}
}

// place applies a run's objects on the instance's cluster with the instance's marks, within
// its definition's kinds and pods (on a member, its namespace made ready there first) after
// save (the state kept: ApplyAfter lets only the creation of objects that do not exist overlap
// it) and judges a runnable:// run, reading its outputs once it succeeded. A request to a
// member that got no answer marks the member unreachable (members.Failed).
func (r *Reconciler) place(ctx context.Context, p *pass, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (provisioning.Applied, error) {
	tgt, namespace := p.target, p.id.Namespace
	marks := provisioning.Marks(*p.Definition, namespace, p.id.Hash(), p.Claim.Status.Resources...)
	var applied apply.Result
	var err error
	if tgt.Member != nil {
		err = tgt.Member.EnsureNamespace(ctx, namespace)
	}
	if err != nil {
		if serr := save(ctx); serr != nil {
			return provisioning.Applied{}, serr
		}
	} else {
		applied, err = tgt.Applier.ApplyAfter(ctx, save, objs, marks)
	}
	var outputs map[string]any
	if err == nil && run != nil {
		outputs, err = r.judgeRun(ctx, tgt.Applier, *p.Definition, &applied, marks)
	}
	clusters.Tag(applied.Objects, p.Cluster)
	if err != nil && tgt.Member != nil {
		r.members.Failed(tgt.Member, namespace, err)
	}
	return provisioning.Applied{Objects: applied.Objects, Waiting: applied.Waiting, RunOutputs: outputs}, err
}
