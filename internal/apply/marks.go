package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// PlanMarks are the marks of what the runtime applies for a plan: in the plan's namespace,
// labelled with its Workload's name, annotated with its Workload's UID (an object annotated
// for another Workload, or not annotated, is never taken over) and controlled by the plan.
// The offline render marks with the same function, with the UIDs it is given.
func PlanMarks(p *scorev1b1.WorkloadPlan) Marks {
	m := Marks{
		Namespace:       p.Namespace,
		Labels:          map[string]string{scorev1b1.LabelWorkload: p.Spec.WorkloadRef.Name},
		Annotations:     map[string]string{scorev1b1.AnnotationWorkloadUID: p.Spec.WorkloadRef.UID},
		OwnerAnnotation: scorev1b1.AnnotationWorkloadUID,
		OwnerNameLabel:  scorev1b1.LabelWorkload,
	}
	if p.UID != "" {
		m.Controller = &metav1.OwnerReference{APIVersion: scorev1b1.GroupVersion.String(), Kind: "WorkloadPlan", Name: p.Name, UID: p.UID}
	}
	return m
}

// InstanceMarks are the marks of what a provisioner applies for an instance: in the
// instance's namespace, labelled with its identity hash. An existing object is taken over,
// except that one labelled for another instance keeps that label: an object several
// instances produce (the broker every topic of a namespace uses) stays the first one's.
func InstanceMarks(namespace, instance string) Marks {
	return Marks{
		Namespace: namespace,
		Labels:    map[string]string{scorev1b1.LabelInstance: instance},
		KeepLabel: scorev1b1.LabelInstance,
	}
}

// Union is previous with the entries of applied added or replaced (by Key), in previous's
// order then applied's: the inventory while a staged apply waits, which must still list what
// earlier renders applied, for a later prune.
func Union(previous, applied []scorev1b1.AppliedObject) []scorev1b1.AppliedObject {
	index := make(map[string]int, len(applied))
	for i, o := range applied {
		index[Key(o)] = i
	}
	out := make([]scorev1b1.AppliedObject, 0, len(previous)+len(applied))
	used := map[int]bool{}
	for _, o := range previous {
		if i, ok := index[Key(o)]; ok {
			out = append(out, applied[i])
			used[i] = true
			continue
		}
		out = append(out, o)
	}
	for i, o := range applied {
		if !used[i] {
			out = append(out, o)
		}
	}
	return out
}
