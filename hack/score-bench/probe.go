package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// timings are the lifecycle document's four status timings ("Status Consistency Timing"),
// measured as test/e2e TestStatusTimingPromises does, plus one Workload's create→Ready.
type timings struct {
	// CreateToReady is a web service's create→Ready.
	CreateToReady float64 `json:"createToReadySeconds"`
	// Status: a spec change to every condition at the new generation (promise: 30 s).
	Status float64 `json:"statusSeconds"`
	// Endpoint: the exposure published to the endpoint on the Workload (promise: 60 s).
	Endpoint float64 `json:"endpointSeconds"`
	// Error: a claim failing to the failure on the Workload (promise: 15 s).
	Error float64 `json:"errorSeconds"`
	// Recovery: the failure cleared to Ready (promise: 30 s).
	Recovery float64 `json:"recoverySeconds"`
	// Failed says what did not happen in time, if anything.
	Failed string `json:"failed,omitempty"`
}

// prober runs the timing probes in their own namespace. It reads from the benchmark's watch
// cache, so polling adds no load on the API server.
type prober struct {
	c     client.Client
	cache cache.Cache
	ns    string
	limit time.Duration
}

// until polls cond every 10 ms and returns when it held.
func (p *prober) until(ctx context.Context, what string, cond func() bool) (time.Time, error) {
	deadline := time.Now().Add(p.limit)
	for !cond() {
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s: not within %s", what, p.limit)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return time.Now(), nil
}

func (p *prober) get(name string) *scorev1b1.Workload {
	w := &scorev1b1.Workload{}
	if err := p.cache.Get(context.Background(), client.ObjectKey{Namespace: p.ns, Name: name}, w); err != nil {
		return &scorev1b1.Workload{}
	}
	return w
}

func ready(w *scorev1b1.Workload) *metav1.Condition {
	return meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
}

func readyNow(w *scorev1b1.Workload) bool {
	r := ready(w)
	return r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == w.Generation
}

// update reads the Workload, changes it and writes it back, retrying on conflicts.
func (p *prober) update(ctx context.Context, name string, change func(*scorev1b1.Workload)) error {
	for {
		w := &scorev1b1.Workload{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, w); err != nil {
			return err
		}
		change(w)
		err := p.c.Update(ctx, w)
		if err == nil || !isConflict(err) {
			return err
		}
	}
}

// run measures the timings with Workloads named prefix-web and prefix-broken.
func (p *prober) run(ctx context.Context, prefix string) (t timings) {
	secs := func(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }
	fail := func(err error) timings { t.Failed = err.Error(); return t }
	web, broken := prefix+"-web", prefix+"-broken"

	// Endpoint reflection: from the runtime publishing the exposure to the Workload's endpoint.
	start := time.Now()
	if err := p.c.Create(ctx, webWorkload(p.ns, web, kindNone)); err != nil {
		return fail(err)
	}
	published, err := p.until(ctx, "the exposure published", func() bool {
		e := &scorev1b1.WorkloadExposure{}
		return p.cache.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: web}, e) == nil && len(e.Status.Exposures) > 0
	})
	if err != nil {
		return fail(err)
	}
	endpoint, err := p.until(ctx, "the endpoint mirrored", func() bool { return p.get(web).Status.Endpoint != nil })
	if err != nil {
		return fail(err)
	}
	t.Endpoint = secs(endpoint.Sub(published))
	readyAt, err := p.until(ctx, "web Ready", func() bool { return readyNow(p.get(web)) })
	if err != nil {
		return fail(err)
	}
	t.CreateToReady = secs(readyAt.Sub(start))

	// Status: from a spec change to every condition reflecting the new generation.
	if err := p.update(ctx, web, func(w *scorev1b1.Workload) {
		w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.28"}
	}); err != nil {
		return fail(err)
	}
	changed := time.Now()
	status, err := p.until(ctx, "the status of the new generation", func() bool {
		w := p.get(web)
		return w.Generation > 1 && w.Status.ObservedGeneration == w.Generation && ready(w) != nil && ready(w).ObservedGeneration == w.Generation
	})
	if err != nil {
		return fail(err)
	}
	t.Status = secs(status.Sub(changed))

	// Error propagation: from a claim failing (a copy's, with --clusters) to the Workload saying so.
	b := webWorkload(p.ns, broken, kindNone)
	b.Spec.Service = nil
	b.Spec.Resources = map[string]scorev1b1.Resource{"db": {Type: "no-such-database"}}
	if err := p.c.Create(ctx, b); err != nil {
		return fail(err)
	}
	failed, err := p.until(ctx, "the claim failed", func() bool {
		var claims scorev1b1.ResourceClaimList
		if err := p.cache.List(ctx, &claims, client.InNamespace(p.ns), client.MatchingLabels{scorev1b1.LabelWorkload: broken}); err != nil {
			return false
		}
		// One claim per copy with --clusters: the first to fail.
		for _, c := range claims.Items {
			if c.Status.Phase == scorev1b1.ClaimPhaseFailed {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fail(err)
	}
	errorAt, err := p.until(ctx, "the failure on the Workload", func() bool {
		r := ready(p.get(broken))
		return r != nil && r.Reason == string(scorev1b1.ReasonClaimFailed)
	})
	if err != nil {
		return fail(err)
	}
	t.Error = secs(errorAt.Sub(failed))

	// Recovery detection: from the failure cleared (the dependency dropped) to Ready.
	if err := p.update(ctx, broken, func(w *scorev1b1.Workload) { w.Spec.Resources = nil }); err != nil {
		return fail(err)
	}
	fixed := time.Now()
	recovered, err := p.until(ctx, "Ready after the fix", func() bool { return readyNow(p.get(broken)) })
	if err != nil {
		return fail(err)
	}
	t.Recovery = secs(recovered.Sub(fixed))
	return t
}
