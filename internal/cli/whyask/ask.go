// Package whyask asks the control plane for a Workload's decision trace through a WorkloadTrace,
// for a user who may not read the Orchestrator Config or the internal kinds (a tenant bound to
// score-workload-editor): it creates the request in the Workload's namespace, waits for the
// orchestrator's answer by watching that request alone, deletes it and returns the answer. The
// user's own rights decide whether it may ask; nothing else is read or written.
package whyask

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// ErrRemoved is a request the control plane removed before answering it: its namespace held
// more than scorev1b1.MaxWorkloadTraces.
var ErrRemoved = fmt.Errorf("the control plane removed the request before answering it: the namespace holds %d WorkloadTraces already (each goes a minute after its answer at the latest); ask again then", scorev1b1.MaxWorkloadTraces)

// NotAnsweredError is a request the control plane answered without a trace (its Answered
// condition is False): the Workload does not exist, or no config is loaded.
type NotAnsweredError struct {
	Reason, Message string
}

func (e *NotAnsweredError) Error() string {
	return fmt.Sprintf("the control plane gave no trace (%s): %s", e.Reason, e.Message)
}

// Trace asks, with c, for the trace of the Workload namespace/name and waits up to timeout for
// the answer. The request is deleted however it ends.
func Trace(ctx context.Context, c client.WithWatch, namespace, name string, timeout time.Duration) (scorev1b1.Trace, error) {
	req := &scorev1b1.WorkloadTrace{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: name + "-"},
		Spec: scorev1b1.WorkloadTraceSpec{Workload: name}}
	if err := c.Create(ctx, req); err != nil {
		return scorev1b1.Trace{}, fmt.Errorf("asking the control plane (creating a WorkloadTrace in %s): %w", namespace, err)
	}
	defer func() {
		// Deleted even when ctx ended (an interrupt): the request is no use to anyone else.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.IgnoreNotFound(c.Delete(dctx, req, client.Preconditions{UID: &req.UID}))
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answered, err := wait(ctx, c, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return scorev1b1.Trace{}, fmt.Errorf("the control plane did not answer WorkloadTrace %s/%s within %s: is the orchestrator running?", namespace, req.Name, timeout)
	case err != nil:
		return scorev1b1.Trace{}, err
	}
	cond := meta.FindStatusCondition(answered.Status.Conditions, scorev1b1.TraceConditionAnswered)
	if cond.Status != metav1.ConditionTrue || answered.Status.Trace == nil {
		return scorev1b1.Trace{}, &NotAnsweredError{Reason: cond.Reason, Message: cond.Message}
	}
	return *answered.Status.Trace, nil
}

// wait watches the request alone, from the version its creation returned, until its Answered
// condition is set; a watch the server ends is opened again from the last version seen.
// Nothing is polled.
func wait(ctx context.Context, c client.WithWatch, req *scorev1b1.WorkloadTrace) (*scorev1b1.WorkloadTrace, error) {
	version := req.ResourceVersion
	for {
		w, err := c.Watch(ctx, &scorev1b1.WorkloadTraceList{}, &client.ListOptions{Namespace: req.Namespace,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", req.Name), Raw: &metav1.ListOptions{ResourceVersion: version}})
		if err != nil {
			return nil, fmt.Errorf("watching WorkloadTrace %s/%s: %w", req.Namespace, req.Name, err)
		}
		got, err := next(ctx, w, &version)
		w.Stop()
		if got != nil || err != nil {
			return got, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// next reads events until the request is answered (returned), removed (ErrRemoved), the watch
// ends (nil, nil: open it again) or ctx ends.
func next(ctx context.Context, w watch.Interface, version *string) (*scorev1b1.WorkloadTrace, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, open := <-w.ResultChan():
			if !open {
				return nil, nil
			}
			t, ok := e.Object.(*scorev1b1.WorkloadTrace)
			switch {
			case e.Type == watch.Error:
				// An expired version, say: open it again from the request as it is now (a
				// watch from no version starts with it).
				*version = ""
				return nil, nil
			case !ok:
				continue
			case e.Type == watch.Deleted:
				return nil, ErrRemoved
			}
			*version = t.ResourceVersion
			if meta.FindStatusCondition(t.Status.Conditions, scorev1b1.TraceConditionAnswered) != nil {
				return t, nil
			}
		}
	}
}
