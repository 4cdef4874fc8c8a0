package provisioning

import (
	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
)

// DataInput is what a definition's data is made of; the provisioner reads it from the cluster,
// the offline render from the files it is given.
type DataInput struct {
	Identity Identity
	// Class is the class definitions see: the resolved one (the type's default when the claim
	// names none); "" keeps the identity's. The identity itself keeps the class the claim
	// names, so adding classes never moves an instance onto new state.
	Class            string
	Params, Metadata map[string]any
	State, Shared    map[string]any
	// Source is the claiming Workload's name, and SourceWorkload the Workload when it exists
	// (else it is looked up among Workloads). Workloads are those the definition sees
	// (.WorkloadServices): the instance's namespace's, which is the claim's own unless the
	// platform shares the instance from another.
	Source         string
	SourceWorkload *scorev1b1.Workload
	Workloads      []*scorev1b1.Workload
	// Sharing is the definition's cross-namespace sharing, if any.
	Sharing *orchconfig.Sharing
}

// NewData is the data a definition's templates (and a command's input) see.
func NewData(in DataInput) Data {
	id := in.Identity
	d := Data{
		Guid: id.Guid(), Uid: id.Uid(), Type: id.Type, Class: id.Class, Id: id.ID,
		Params: in.Params, Metadata: in.Metadata, State: in.State, Shared: in.Shared,
		SourceWorkload: in.Source, Namespace: id.Namespace, Instance: id.Hash(),
		WorkloadServices: map[string]NetworkService{},
		MountsDirectory:  compose.MountsDirectory, ComposeProjectName: id.Namespace,
	}
	if in.Class != "" {
		d.Class = in.Class
	}
	if d.State == nil {
		d.State = map[string]any{}
	}
	if d.Shared == nil {
		d.Shared = map[string]any{}
	}
	if in.Sharing != nil && id.Namespace == in.Sharing.Namespace {
		d.ConsumerNamespaces = in.Sharing.NamespaceSelector.LabelSelector()
	}
	for _, w := range in.Workloads {
		d.WorkloadServices[w.Name] = ServiceOf(w.Name, w.Spec.Service)
		if w.Name == in.Source && in.SourceWorkload == nil {
			d.WorkloadMetadata = planner.Metadata(w)
		}
	}
	if in.SourceWorkload != nil {
		d.WorkloadMetadata = planner.Metadata(in.SourceWorkload)
	}
	return d
}
