package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
)

// Where the installed objects live.
const (
	SystemNamespace    = "score-system"
	ConfigMapName      = "orchestrator-config"
	ConfigKey          = "config.yaml"
	TemplatesConfigMap = "score-templates"
	fieldOwner         = "score-dev"
)

func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// Install applies, server-side, what a development cluster needs before the controllers
// start: the score.dev kinds and any third-party CRDs the catalog uses, the controllers'
// ClusterRoles bound to their service accounts in score-system, with a Role for their leases
// there, the users' ClusterRoles (config/rbac/users, bound by nobody), the admission policy
// that binds previews to their makers (config/admission/preview-makers.yaml), the Orchestrator Config
// (the sample profiles plus every provisioner file of the development catalog, validated as
// the orchestrator validates it) and the default templates. It returns the config installed.
func Install(ctx context.Context, c client.Client, bundle fs.FS) (*orchconfig.Config, error) {
	crds, err := applyFiles(ctx, c, bundle, "config/crd/bases/*.yaml", "config/crd/thirdparty/*.yaml")
	if err != nil {
		return nil, err
	}
	if err := waitEstablished(ctx, c, crds); err != nil {
		return nil, err
	}

	assembled, err := orchconfig.DevelopmentConfig(bundle)
	if err != nil {
		return nil, err
	}
	cfg, err := orchconfig.Parse(assembled)
	if err != nil {
		return nil, err
	}
	templates, err := TemplatesConfigMaps(bundle)
	if err != nil {
		return nil, err
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: ConfigMapName}, Data: map[string]string{ConfigKey: string(assembled)}},
	}
	objects = append(objects, templates...)
	leaderElection := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: "score-leader-election"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "score-leader-election"},
	}
	for _, name := range controlplane.All {
		leaderElection.Subjects = append(leaderElection.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: SystemNamespace, Name: "score-" + name})
	}
	objects = append(objects, leaderElection)
	for _, name := range controlplane.All {
		raw, err := fs.ReadFile(bundle, path.Join("config/rbac", name, "role.yaml"))
		if err != nil {
			return nil, err
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(raw, role); err != nil {
			return nil, fmt.Errorf("config/rbac/%s/role.yaml: %w", name, err)
		}
		account := "score-" + name
		objects = append(objects, role,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: account}},
			&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: SystemNamespace, Name: account}},
			})
	}
	for _, o := range objects {
		u, err := toUnstructured(c, o)
		if err != nil {
			return nil, err
		}
		if err := apply(ctx, c, u); err != nil {
			return nil, err
		}
	}
	// The controllers' leader-election Role, the roles a platform binds to its users
	// (score-workload-editor, -viewer), and the admission policy that binds previews to their
	// makers (without it the control plane neither admits nor ends a preview).
	if _, err := applyFiles(ctx, c, bundle, "config/rbac/leader-election.yaml", "config/rbac/users/*.yaml", "config/admission/preview-makers.yaml"); err != nil {
		return nil, err
	}
	return cfg, nil
}

// TemplatesConfigMaps are the default templates (in SystemNamespace): score-templates holds each file of
// config/templates under its name, and each directory (a kustomization) becomes a ConfigMap
// of its own name holding its files, as `kubectl create configmap --from-file` would.
func TemplatesConfigMaps(bundle fs.FS) ([]client.Object, error) {
	entries, err := fs.ReadDir(bundle, "config/templates")
	if err != nil {
		return nil, err
	}
	files, err := directoryConfigMap(bundle, "config/templates", TemplatesConfigMap)
	if err != nil {
		return nil, err
	}
	out := []client.Object{files}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cm, err := directoryConfigMap(bundle, path.Join("config/templates", e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, cm)
	}
	return out, nil
}

// directoryConfigMap holds the files directly in dir: text in data, anything else in
// binaryData.
func directoryConfigMap(bundle fs.FS, dir, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: name}, Data: map[string]string{}}
	entries, err := fs.ReadDir(bundle, dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		raw, err := fs.ReadFile(bundle, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if utf8.Valid(raw) {
			cm.Data[e.Name()] = string(raw)
			continue
		}
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		cm.BinaryData[e.Name()] = raw
	}
	return cm, nil
}

// ApplyExamples converts every shipped example Score file and applies its Workloads to ns,
// creating ns when missing. It returns the Workload names.
func ApplyExamples(ctx context.Context, c client.Client, bundle fs.FS, ns string) ([]string, error) {
	nsObj, err := toUnstructured(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil {
		return nil, err
	}
	if err := apply(ctx, c, nsObj); err != nil {
		return nil, err
	}
	files, err := fs.Glob(bundle, "examples/*/score.yaml")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		workloads, err := Example(bundle, f, ns)
		if err != nil {
			return nil, err
		}
		for _, w := range workloads {
			u, err := toUnstructured(c, w)
			if err != nil {
				return nil, err
			}
			unstructured.RemoveNestedField(u.Object, "status")
			if err := apply(ctx, c, u); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			names = append(names, w.Name)
		}
	}
	return names, nil
}

// Example converts the example Score file at name in bundle to Workloads in ns.
func Example(bundle fs.FS, name, ns string) ([]*scorev1b1.Workload, error) {
	raw, err := fs.ReadFile(bundle, name)
	if err != nil {
		return nil, err
	}
	docs, err := scorefile.DecodeDocuments(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []*scorev1b1.Workload
	for _, doc := range docs {
		res, err := scorefile.ToWorkload(doc, scorefile.Options{Namespace: ns})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, res.Workload)
	}
	return out, nil
}

func globAll(bundle fs.FS, patterns ...string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		m, err := fs.Glob(bundle, p)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// decodeFile decodes every YAML document of a file in bundle.
func decodeFile(bundle fs.FS, name string) ([]*unstructured.Unstructured, error) {
	raw, err := fs.ReadFile(bundle, name)
	if err != nil {
		return nil, err
	}
	objs, err := DecodeDocuments(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return objs, nil
}

// DecodeDocuments decodes a stream of YAML (or JSON) documents into objects, skipping empty
// documents.
func DecodeDocuments(raw []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		m := map[string]any{}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

func toUnstructured(c client.Client, o client.Object) (*unstructured.Unstructured, error) {
	gvk, err := c.GroupVersionKindFor(o)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func apply(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// waitEstablished waits until every named CRD serves its kind.
func waitEstablished(ctx context.Context, c client.Client, names []string) error {
	sort.Strings(names)
	deadline := time.Now().Add(time.Minute)
	for _, name := range names {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if established(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the CRD %s is not Established after a minute", name)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// applyFiles applies every object of the bundle's files matching the patterns and returns
// their names.
func applyFiles(ctx context.Context, c client.Client, bundle fs.FS, patterns ...string) ([]string, error) {
	files, err := globAll(bundle, patterns...)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		objs, err := decodeFile(bundle, f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if err := apply(ctx, c, o); err != nil {
				return nil, err
			}
			names = append(names, o.GetName())
		}
	}
	return names, nil
}
