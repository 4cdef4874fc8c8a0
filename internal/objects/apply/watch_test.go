package apply

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reader holds objects by name and counts its reads.
type reader struct {
	cache.Cache // only Get is used
	objects     map[string]string
	reads       int
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

func TestGetReadsTheCacheOfWatchedKindsOnly(t *testing.T) {
	service := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	cases := []struct {
		name                            string
		watched, cached, apiServerHasIt bool
		syncing                         bool   // watched, its watch not delivering events yet
		want                            string // "" for not found
		apiServerReads                  int
	}{
		{name: "a watched kind the cache holds", watched: true, cached: true, apiServerHasIt: true, want: "cache"},
		{name: "an absence in the cache is asked of the API server", watched: true, apiServerHasIt: true, want: "api", apiServerReads: 1},
		{name: "a kind not watched yet", cached: true, apiServerHasIt: true, want: "api", apiServerReads: 1},
		{name: "a kind whose watch has not synced", syncing: true, cached: true, apiServerHasIt: true, want: "api", apiServerReads: 1},
		{name: "absent everywhere", watched: true, apiServerReads: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, api := &reader{objects: map[string]string{}}, &reader{objects: map[string]string{}}
			if tc.cached {
				c.objects["web"] = "cache"
			}
			if tc.apiServerHasIt {
				api.objects["web"] = "api"
			}
			w := &Watcher{Cache: c}
			if tc.watched {
				w.kind(service, true).synced.Store(true)
			}
			if tc.syncing {
				w.kind(service, true)
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(service)
			err := w.Get(context.Background(), api, client.ObjectKey{Namespace: "ns", Name: "web"}, u)
			if tc.want == "" {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("err %v, want not found", err)
				}
			} else if err != nil || u.GetAnnotations()["from"] != tc.want {
				t.Fatalf("read from %q (err %v), want %q", u.GetAnnotations()["from"], err, tc.want)
			}
			cacheReads := 0
			if tc.watched {
				cacheReads = 1
			}
			if api.reads != tc.apiServerReads || c.reads != cacheReads {
				t.Fatalf("API server reads %d, cache reads %d", api.reads, c.reads)
			}
		})
	}
}
