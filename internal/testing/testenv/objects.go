package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Create creates the objects in order, failing the test at the first error.
func Create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	if err := CreateAll(context.Background(), c, objs...); err != nil {
		t.Fatal(err)
	}
}

// CreateAll creates the objects in order and stops at the first error, for set-up code that
// has no test to fail.
func CreateAll(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// namespaces counts the namespaces Namespace created, to keep their names apart.
var namespaces atomic.Int64

// notInName matches what a namespace name cannot hold.
var notInName = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace creates a namespace for one test and returns its name: a number unique in the
// process, then the test's name, so that what a failing test left behind is easy to find.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := fmt.Sprintf("t%02d-%s", namespaces.Add(1), strings.Trim(notInName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-"))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

// SecretValue reads one key of a Secret.
func SecretValue(t testing.TB, c client.Client, ns, name, key string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[key])
}

// Digest is data's digest as a template or chart reference pins it: sha256:<hex>.
func Digest[T string | []byte](data T) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}
