package clusters

import (
	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Tag records in an inventory the cluster its objects are in.
func Tag(objs []scorev1b1.AppliedObject, cluster string) []scorev1b1.AppliedObject {
	for i := range objs {
		objs[i].Cluster = cluster
	}
	return objs
}

// Split divides an inventory into the entries on cluster and the others.
func Split(objs []scorev1b1.AppliedObject, cluster string) (on, others []scorev1b1.AppliedObject) {
	for _, o := range objs {
		if o.Cluster == cluster {
			on = append(on, o)
		} else {
			others = append(others, o)
		}
	}
	return on, others
}
