// Package whyobserve reads, for the decision trace (internal/status/why), the objects in a
// Workload's way that only the cluster can tell about: what why.Next names (or, for a trace the
// control plane answered, why.Reads), then what those show they wait for, until nothing more is
// named or why.MaxReads requests were made. scorectl why reads with the user's kubeconfig, the
// dashboard with the user's own rights: a read the rights forbid is recorded as such, and the
// trace says what it could not read. A Secret is read as metadata only: whether it exists,
// never what it holds.
package whyobserve

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/status/why"
)

// Option changes what Read reads.
type Option func(*options)

type options struct {
	// skipSecrets, when set, says why no Secret is asked about.
	skipSecrets string
}

// SkipSecrets asks nothing of Secrets, not even whether one exists; the trace says because in
// their place. The dashboard, which makes no request for a Secret at all, reads so.
func SkipSecrets(because string) Option {
	return func(o *options) { o.skipSecrets = because }
}

// Read makes, with r, the reads the trace of in names, and returns what they found. It stops
// when ctx ends.
func Read(ctx context.Context, r client.Reader, in why.Input, opts ...Option) why.Observed {
	return loop(ctx, r, func(obs why.Observed) []why.Read {
		in.Observed = obs
		return why.Next(in)
	}, opts)
}

// Probes makes, with r, the reads that resolving tr's probes names (why.Reads): a trace the
// control plane answered, whose objects in the way the user reads with their own rights. It
// stops when ctx ends.
func Probes(ctx context.Context, r client.Reader, tr scorev1b1.Trace, opts ...Option) why.Observed {
	return loop(ctx, r, func(obs why.Observed) []why.Read { return why.Reads(tr, obs) }, opts)
}

// loop makes the reads next names, then those it names from what they found, until it names
// none or why.MaxReads were made.
func loop(ctx context.Context, r client.Reader, next func(why.Observed) []why.Read, opts []Option) why.Observed {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	obs := why.Observed{}
	made := 0
	for reads := next(obs); len(reads) > 0; reads = next(obs) {
		for _, rd := range reads {
			if o.skipSecrets != "" && rd.Ref.APIVersion == "v1" && rd.Ref.Kind == "Secret" {
				obs[rd] = why.Result{Err: o.skipSecrets}
				continue
			}
			if made == why.MaxReads || ctx.Err() != nil {
				return obs
			}
			obs[rd] = read(ctx, r, rd)
			made++
		}
	}
	return obs
}

// read makes one request.
func read(ctx context.Context, r client.Reader, rd why.Read) why.Result {
	gvk := schema.FromAPIVersionAndKind(rd.Ref.APIVersion, rd.Ref.Kind)
	key := client.ObjectKey{Namespace: rd.Ref.Namespace, Name: rd.Ref.Name}
	switch {
	case rd.MetadataOnly:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		if err := r.Get(ctx, key, m); err != nil {
			return failed(err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		u.SetUID(m.UID)
		return why.Result{Objects: []*unstructured.Unstructured{u}}
	case rd.List.Limit > 0:
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.InNamespace(rd.Ref.Namespace), client.Limit(int64(rd.List.Limit))}
		if rd.List.Labels != "" {
			sel, err := labels.Parse(rd.List.Labels)
			if err != nil {
				return why.Result{Err: err.Error()}
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		if rd.List.Fields != "" {
			sel, err := fields.ParseSelector(rd.List.Fields)
			if err != nil {
				return why.Result{Err: err.Error()}
			}
			opts = append(opts, client.MatchingFieldsSelector{Selector: sel})
		}
		if err := r.List(ctx, l, opts...); err != nil {
			return failed(err)
		}
		res := why.Result{}
		for i := range l.Items {
			res.Objects = append(res.Objects, &l.Items[i])
		}
		return res
	default:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := r.Get(ctx, key, u); err != nil {
			return failed(err)
		}
		return why.Result{Objects: []*unstructured.Unstructured{u}}
	}
}

// failed says what kept a read from being made: an object that does not exist, rights that
// do not allow it, a kind the API server does not serve, anything else in its own words.
func failed(err error) why.Result {
	switch {
	case apierrors.IsNotFound(err):
		return why.Result{Missing: true}
	case apierrors.IsForbidden(err):
		return why.Result{Denied: true}
	case meta.IsNoMatchError(err):
		return why.Result{Err: "the API server does not serve this kind"}
	}
	return why.Result{Err: err.Error()}
}
