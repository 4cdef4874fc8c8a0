package workloaddecision

import (
	"fmt"
	"regexp"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
)

// InstanceVolumes are the volumes of the provisioned instances of a namespace, as their claims'
// inventories list them: volume claims by name, and the stateful sets whose volumes are named
// <template>-<set>-<ordinal>.
type InstanceVolumes struct {
	Claims map[string]bool
	Sets   []string
}

// Has reports whether name is a volume of an instance.
func (v InstanceVolumes) Has(name string) bool {
	if v.Claims[name] {
		return true
	}
	for _, set := range v.Sets {
		infix := "-" + set + "-"
		if i := strings.LastIndex(name, infix); i > 0 && ordinal.MatchString(name[i+len(infix):]) {
			return true
		}
	}
	return false
}

// ordinal is a stateful set's ordinal: digits, without a leading zero.
var ordinal = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// InstanceVolumesOf are the volumes the claims' instances in namespace have: of each claim whose
// instance lives there (its own namespace's, or a namespace the platform shares it from), the
// volume claims and stateful sets its inventory lists, on any cluster.
func InstanceVolumesOf(claims []scorev1b1.ResourceClaim, namespace string) InstanceVolumes {
	out := InstanceVolumes{Claims: map[string]bool{}}
	for i := range claims {
		c := &claims[i]
		home := c.Status.InstanceNamespace
		if home == "" {
			home = c.Namespace
		}
		if home != namespace {
			continue
		}
		for _, o := range c.Status.Resources {
			if o.Namespace != namespace {
				continue
			}
			switch {
			case o.Kind == "PersistentVolumeClaim" && o.APIVersion == "v1":
				out.Claims[o.Name] = true
			case o.Kind == "StatefulSet" && strings.HasPrefix(o.APIVersion, "apps/"):
				out.Sets = append(out.Sets, o.Name)
			}
		}
	}
	return out
}

// NamedVolumeRefused says why a volume the Workload mounts by name is refused, "" when none is:
// only a volume a rule of the platform admits for the Workload's namespace is mounted by name,
// and never one of a provisioned instance, whatever the rules say.
func NamedVolumeRefused(w *scorev1b1.Workload, cfg *orchconfig.Config, labels map[string]string, instances InstanceVolumes) string {
	for _, v := range planner.NamedVolumes(w) {
		if instances.Has(v.Name) {
			return fmt.Sprintf("%s: Volume %s belongs to a provisioned dependency; a workload mounts a dependency's volume with ${resources.<name>}.", v.Field, v.Name)
		}
		if ok, admitted := cfg.NamedVolumeAllowed(w.Namespace, labels, v.Name); !ok {
			what := "no volume by name"
			if len(admitted) > 0 {
				what = strings.Join(admitted, ", ")
			}
			return fmt.Sprintf("%s: The platform does not let namespace %s mount volume %s by name; it admits %s there.", v.Field, w.Namespace, v.Name, what)
		}
	}
	return ""
}
