// Package shard is how controller instances divide the Workloads among themselves, in the
// convention Flux uses: a Workload labelled score.dev/shard=NAME belongs to the instances
// started with --watch-label-selector=score.dev/shard=NAME, the unlabelled rest to the
// instance started with !score.dev/shard, and an instance started without a selector owns
// every Workload. The orchestrator copies a Workload's label onto its claims, plan and
// exposure, so that each instance's provisioner and runtime see the same Workloads' objects.
package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Selector parses a --watch-label-selector. It may select on score.dev/shard only: the
// objects that follow a Workload carry that label and no other of the Workload's, so a
// selector on any other label would show an instance Workloads without their objects.
// The empty selector selects everything (nil: not sharded).
func Selector(s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--watch-label-selector %q: %w", s, err)
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if r.Key() != scorev1b1.LabelShard {
			return nil, fmt.Errorf("--watch-label-selector %q selects on %s; shards select on %s only (for example %s=blue, or !%s for the unlabelled rest)",
				s, r.Key(), scorev1b1.LabelShard, scorev1b1.LabelShard, scorev1b1.LabelShard)
		}
	}
	return sel, nil
}

// LeaseSuffix tells the leases of different shards apart: "" unsharded, else a short digest
// of the selector.
func LeaseSuffix(sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return ""
	}
	sum := sha256.Sum256([]byte(sel.String()))
	return "-" + hex.EncodeToString(sum[:4])
}

// Follow sets the shard label of labels to the Workload's (removing it when the Workload has
// none) and says whether it changed anything. labels may be nil when the Workload has none.
func Follow(objLabels map[string]string, workload map[string]string) (map[string]string, bool) {
	want, labelled := workload[scorev1b1.LabelShard]
	got, has := objLabels[scorev1b1.LabelShard]
	switch {
	case labelled && (!has || got != want):
		if objLabels == nil {
			objLabels = map[string]string{}
		}
		objLabels[scorev1b1.LabelShard] = want
		return objLabels, true
	case !labelled && has:
		delete(objLabels, scorev1b1.LabelShard)
		return objLabels, true
	}
	return objLabels, false
}

// Owns says whether an instance with sel owns o (a Workload, or an object that follows one):
// every object when sel is nil.
func Owns(sel labels.Selector, o metav1.Object) bool {
	return sel == nil || sel.Matches(labels.Set(o.GetLabels()))
}
