package provisioning

import (
	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
)

// Marks are the marks of what a definition's run applies for an instance: the instance's
// (prepare.InstanceMarks, with the objects its claim lists), within the definition's kinds and
// pods. The provisioner and the offline render both mark with it.
func Marks(def orchconfig.Provisioner, namespace, instance string, listed ...scorev1b1.AppliedObject) prepare.Marks {
	m := prepare.InstanceMarks(namespace, instance, listed...)
	m.Kinds, m.Pods = def.Kinds, def.Pods.Policy()
	return m
}
