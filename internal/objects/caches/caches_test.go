package caches

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reader holds objects by name and counts its reads.
type reader struct {
	client.Reader // only Get is used
	objects       map[string]string
	reads         int
}

func (r *reader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	from, ok := r.objects[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, key.Name)
	}
	obj.(*unstructured.Unstructured).SetAnnotations(map[string]string{"from": from})
	return nil
}

// failing answers every Get with err.
type failing struct {
	client.Reader
	err error
}

func (f failing) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return f.err
}

// A scoped cache never answers that an object does not exist: the API server does.
func TestCacheFirst(t *testing.T) {
	broken := errors.New("connection refused")
	for _, tc := range []struct {
		name          string
		cache         client.Reader
		server        *reader
		want          string // the reader that answered; "" for not found
		err           error
		apiServerAsks int
	}{
		{"cached", &reader{objects: map[string]string{"s": "cache"}}, &reader{objects: map[string]string{"s": "server"}}, "cache", nil, 0},
		{"not cached, on the server", &reader{}, &reader{objects: map[string]string{"s": "server"}}, "server", nil, 1},
		{"nowhere", &reader{}, &reader{}, "", nil, 1},
		{"the cache fails", failing{err: broken}, &reader{objects: map[string]string{"s": "server"}}, "", broken, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			err := CacheFirst{Cache: tc.cache, APIServer: tc.server}.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "s"}, u)
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("error %v, want %v", err, tc.err)
			case tc.err == nil && tc.want == "" && !apierrors.IsNotFound(err):
				t.Fatalf("error %v, want not found", err)
			case tc.want != "" && (err != nil || u.GetAnnotations()["from"] != tc.want):
				t.Fatalf("read %v from %q, want from %q", err, u.GetAnnotations()["from"], tc.want)
			}
			if tc.server.reads != tc.apiServerAsks {
				t.Fatalf("the API server was asked %d times, want %d", tc.server.reads, tc.apiServerAsks)
			}
		})
	}
}

// The scope selects any value of the label, and nothing without it.
func TestOwnLabelSelector(t *testing.T) {
	sel := OwnLabelSelector("score.dev/workload")
	if got := sel.String(); got != "score.dev/workload" {
		t.Fatalf("selector %q", got)
	}
	for pair, want := range map[string]bool{"score.dev/workload=web": true, "score.dev/workload=": true, "app=web": false, "": false} {
		set := labels.Set{}
		if k, v, ok := strings.Cut(pair, "="); ok {
			set[k] = v
		}
		if got := sel.Matches(set); got != want {
			t.Errorf("%q: matches %v, want %v", pair, got, want)
		}
	}
}
