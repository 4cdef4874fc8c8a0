package configsource

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The cache keeps no managedFields, of typed or unstructured objects: make bench's heap
// profiles showed cached objects dominated by them.
func TestCacheOptionsStripManagedFields(t *testing.T) {
	transform := CacheOptions().DefaultTransform
	if transform == nil {
		t.Fatal("no default transform")
	}
	fields := []metav1.ManagedFieldsEntry{{Manager: "score-runtime", Operation: metav1.ManagedFieldsOperationApply}}
	typed := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: fields}}
	u := &unstructured.Unstructured{}
	u.SetName("web")
	u.SetManagedFields(fields)
	for _, obj := range []metav1.Object{typed, u} {
		out, err := transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		if m := out.(metav1.Object).GetManagedFields(); len(m) != 0 {
			t.Fatalf("%T keeps managedFields %v", obj, m)
		}
		if out.(metav1.Object).GetName() != "web" {
			t.Fatalf("%T lost its name", obj)
		}
	}
}
