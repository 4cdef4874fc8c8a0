package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// catalogRow is one development catalog type, claimed by a Workload of its own.
type catalogRow struct {
	name, typ string
	params    string
	// retain asks for the Retain policy on the resource where the catalog default is Delete.
	retain bool
	// kinds are the kinds of the objects the claim must list, each healthy.
	kinds []string
}

const catalogNS = "e2e-catalog"

var catalogRows = []catalogRow{
	{name: "postgres", typ: "postgres", kinds: []string{"NetworkPolicy", "Secret", "Service", "StatefulSet"}},
	{name: "redis", typ: "redis", kinds: []string{"NetworkPolicy", "Secret", "Service", "StatefulSet"}},
	{name: "mysql", typ: "mysql", retain: true, kinds: []string{"NetworkPolicy", "Secret", "Service", "StatefulSet"}},
	{name: "mongodb", typ: "mongodb", kinds: []string{"NetworkPolicy", "Secret", "Service", "StatefulSet"}},
	{name: "amqp", typ: "amqp", kinds: []string{"NetworkPolicy", "Secret", "Service", "StatefulSet"}},
	{name: "s3", typ: "s3", kinds: []string{"Job", "NetworkPolicy", "Secret", "Service", "StatefulSet"}},
	{name: "kafka-a", typ: "kafka-topic", kinds: []string{"Job", "Service", "StatefulSet"}},
	{name: "kafka-b", typ: "kafka-topic", params: `{"num_partitions": 6}`, kinds: []string{"Job", "Service", "StatefulSet"}},
	{name: "dns", typ: "dns"},
	{name: "route", typ: "route", params: `{"host": "shop.e2e-catalog.dev.local", "path": "/api", "port": "web"}`, kinds: []string{"HTTPRoute"}},
	{name: "volume", typ: "volume", params: `{"size": "2Gi"}`, kinds: []string{"PersistentVolumeClaim"}},
	{name: "service-port", typ: "service-port", params: `{"workload": "cat-route", "port": "web"}`},
	{name: "environment", typ: "environment"},
}

// catalogWorkload is the Workload of a row: one container and one Service port (8080 in
// front of the container's 8081), claiming the row's type as resource "dep".
func catalogWorkload(row catalogRow) *scorev1b1.Workload {
	res := scorev1b1.Resource{Type: row.typ}
	if row.params != "" {
		res.Params = jsonObject(row.params)
	}
	if row.retain {
		res.Metadata = jsonObject(`{"annotations": {"` + scorev1b1.AnnotationDeprovisionPolicy + `": "Retain"}}`)
	}
	target := int32(8081)
	return &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "cat-" + row.name, Namespace: catalogNS},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "busybox"}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080, TargetPort: &target}}},
			Resources:  map[string]scorev1b1.Resource{"dep": res},
		},
	}
}

// claimOf returns the claim of a row's Workload.
func claimOf(row catalogRow) (*scorev1b1.ResourceClaim, error) {
	var list scorev1b1.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(catalogNS), client.MatchingLabels{scorev1b1.LabelWorkload: "cat-" + row.name}); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("%d claims", len(list.Items))
	}
	return &list.Items[0], nil
}

// bound reports why a claim is not yet Bound with complete outputs and healthy objects.
func bound(row catalogRow, cl *scorev1b1.ResourceClaim) error {
	if cl.Status.Phase != scorev1b1.ClaimPhaseBound || cl.Status.ObservedGeneration != cl.Generation {
		return fmt.Errorf("%s: %s", cl.Status.Phase, cl.Status.Message)
	}
	var kinds []string
	for _, o := range cl.Status.Resources {
		if o.Health != "Current" {
			return fmt.Errorf("%s %s is %s", o.Kind, o.Name, o.Health)
		}
		kinds = append(kinds, o.Kind)
	}
	sort.Strings(kinds)
	if strings.Join(kinds, ",") != strings.Join(row.kinds, ",") {
		return fmt.Errorf("objects %v, want %v", kinds, row.kinds)
	}
	return nil
}

// outputsOf returns a Bound claim's plain outputs and its secret outputs, read from the
// outputs Secret.
func outputsOf(t *testing.T, cl *scorev1b1.ResourceClaim) (map[string]any, map[string]string) {
	t.Helper()
	plain := map[string]any{}
	if cl.Status.Outputs != nil {
		if err := json.Unmarshal(cl.Status.Outputs.Raw, &plain); err != nil {
			t.Fatal(err)
		}
	}
	secret := map[string]string{}
	if cl.Status.SecretRef != nil {
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: cl.Status.SecretRef.Name}, s); err != nil {
			t.Fatal(err)
		}
		for _, k := range cl.Status.SecretRef.Keys {
			secret[k] = string(s.Data[k])
		}
	}
	return plain, secret
}

// Every type of the development catalog binds on the simulated cluster with every expected
// output and healthy objects, keeps its secrets in Secrets, and is deprovisioned per policy:
// Delete removes the objects, the data volumes and the state (a broker other topics still
// use stays until the last one goes); Retain keeps them, and a re-created Workload binds to
// the same data and credentials.
func TestDevelopmentCatalog(t *testing.T) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: catalogNS}}); err != nil {
		t.Fatal(err)
	}
	// The platform's own Secret the environment definition hands out.
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	platformToken := hex.EncodeToString(token)
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "score-environment"}, StringData: map[string]string{"API_TOKEN": platformToken}}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	for _, row := range catalogRows {
		if err := c.Create(ctx, catalogWorkload(row)); err != nil {
			t.Fatal(err)
		}
	}
	boundAfter := map[string]time.Duration{}
	claims := map[string]*scorev1b1.ResourceClaim{}
	testenv.Eventually(t, 3*time.Minute, "every catalog claim Bound with healthy objects", func() error {
		var waiting []string
		for _, row := range catalogRows {
			if _, done := boundAfter[row.name]; done {
				continue
			}
			cl, err := claimOf(row)
			if err == nil {
				err = bound(row, cl)
			}
			if err != nil {
				waiting = append(waiting, row.name+": "+err.Error())
				continue
			}
			boundAfter[row.name], claims[row.name] = time.Since(start), cl
		}
		if len(waiting) > 0 {
			return fmt.Errorf("%s", strings.Join(waiting, "; "))
		}
		return nil
	})
	for _, row := range catalogRows {
		t.Logf("%-13s %-13s Bound after %s", row.name, row.typ, boundAfter[row.name].Round(10*time.Millisecond))
	}

	outputs := map[string]map[string]any{}
	secretOutputs := map[string]map[string]string{}
	for _, row := range catalogRows {
		t.Run(row.name+" outputs", func(t *testing.T) {
			cl := claims[row.name]
			plain, secret := outputsOf(t, cl)
			outputs[row.name], secretOutputs[row.name] = plain, secret
			var def []string
			for _, p := range devConfig.Provisioners {
				if p.URI == "template://score-dev/"+row.typ {
					def = p.ExpectedOutputs
				}
			}
			if len(def) == 0 && row.typ != "route" {
				t.Fatalf("no catalog definition with expected outputs serves %s", row.typ)
			}
			for _, k := range def {
				_, isPlain := plain[k]
				if !isPlain && secret[k] == "" {
					t.Errorf("expected output %s is missing", k)
				}
			}
			if len(def) > 0 != cl.Status.OutputsAvailable {
				t.Errorf("outputsAvailable %v", cl.Status.OutputsAvailable)
			}
		})
	}
	t.Run("outputs say what each type is", func(t *testing.T) {
		if got := outputs["service-port"]; got["hostname"] != "cat-route."+catalogNS+".svc.cluster.local" || got["port"] != float64(8080) {
			t.Errorf("service-port gives the Service's name and port, not the container's: %v", got)
		}
		a, b := outputs["kafka-a"], outputs["kafka-b"]
		if a["host"] != b["host"] || a["name"] == b["name"] || a["num_partitions"] != float64(3) || b["num_partitions"] != float64(6) {
			t.Errorf("two topics, one broker: %v %v", a, b)
		}
		var brokers appsv1.StatefulSetList
		if err := c.List(ctx, &brokers, client.InNamespace(catalogNS), client.MatchingLabels{"app.kubernetes.io/name": "kafka"}); err != nil || len(brokers.Items) != 1 {
			t.Errorf("one broker for the namespace: %d %v", len(brokers.Items), err)
		}
		if got := outputs["dns"]["host"]; got != "cat-dns-dep."+catalogNS+".dev.local" {
			t.Errorf("dns host %v", got)
		}
		if secretOutputs["environment"]["API_TOKEN"] != platformToken || outputs["environment"]["ENVIRONMENT"] != "development" {
			t.Errorf("environment values: %v", outputs["environment"])
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: catalogNS, Name: fmt.Sprint(outputs["volume"]["name"])}, pvc); err != nil || pvc.Status.Phase != corev1.ClaimBound {
			t.Errorf("the volume's claim is bound: %v %v", pvc.Status.Phase, err)
		}
		if src, _ := json.Marshal(outputs["volume"]["source"]); string(src) != fmt.Sprintf(`{"persistentVolumeClaim":{"claimName":%q}}`, pvc.Name) {
			t.Errorf("volume source %s", src)
		}
		route := &unstructured.Unstructured{}
		route.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"})
		if err := c.Get(ctx, client.ObjectKey{Namespace: catalogNS, Name: claims["route"].Status.Resources[0].Name}, route); err != nil {
			t.Fatal(err)
		}
		backend, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
		if raw, _ := json.Marshal(backend); !strings.Contains(string(raw), `"name":"cat-route","port":8080`) {
			t.Errorf("the route sends to the workload's Service port: %s", raw)
		}
	})

	t.Run("no secret value leaves its Secret", func(t *testing.T) {
		values := []string{platformToken}
		for _, s := range secretOutputs {
			for _, v := range s {
				values = append(values, v)
			}
		}
		assertSecretsStayInSecrets(t, values, client.InNamespace(catalogNS))
	})

	// What each claim provisioned, and the data volumes of its StatefulSets.
	provisioned := func(row catalogRow) []client.Object {
		var out []client.Object
		for _, o := range claims[row.name].Status.Resources {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(o.APIVersion)
			u.SetKind(o.Kind)
			u.SetNamespace(o.Namespace)
			u.SetName(o.Name)
			out = append(out, u)
			if o.Kind == "StatefulSet" {
				out = append(out, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: "data-" + o.Name + "-0"}})
			}
		}
		cl := claims[row.name]
		id := provisioning.NewIdentity(cl.Namespace, cl.Spec.WorkloadRef.Name, cl.Spec.Key, cl.Spec.Type, cl.Spec.Class, cl.Spec.ID)
		return append(out, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: id.StateSecretName()}})
	}
	uids := func(objs []client.Object) (map[string]types.UID, error) {
		out := map[string]types.UID{}
		for _, o := range objs {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return nil, fmt.Errorf("%T %s: %w", o, o.GetName(), err)
			}
			out[o.GetName()] = o.GetUID()
		}
		return out, nil
	}
	deleteWorkload := func(t *testing.T, name string) {
		t.Helper()
		w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: name}}
		if err := c.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 2*time.Minute, name+" gone", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	}
	allGone := func(objs []client.Object) error {
		for _, o := range objs {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s is still there (%v)", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
		return nil
	}

	t.Run("Delete leaves the shared broker to the topic still using it", func(t *testing.T) {
		broker := provisioned(catalogRows[6])
		before, err := uids(broker)
		if err != nil {
			t.Fatal(err)
		}
		deleteWorkload(t, "cat-kafka-a")
		after, err := uids(provisioned(catalogRows[7]))
		if err != nil {
			t.Fatalf("the other topic's broker: %v", err)
		}
		for name, uid := range after {
			if old, ok := before[name]; ok && old != uid {
				t.Errorf("%s was deleted and re-created", name)
			}
		}
		if cl, err := claimOf(catalogRows[7]); err != nil || bound(catalogRows[7], cl) != nil {
			t.Errorf("the other topic stays Bound: %v", err)
		}
		var own []client.Object
		for _, o := range broker {
			if _, shared := after[o.GetName()]; !shared {
				own = append(own, o)
			}
		}
		if len(own) != 2 {
			t.Fatalf("the deleted topic's own objects are its Job and state: %d", len(own))
		}
		testenv.Eventually(t, time.Minute, "the deleted topic's own objects gone", func() error { return allGone(own) })
	})

	var retained []catalogRow
	start = time.Now()
	for _, row := range catalogRows {
		if row.name == "kafka-a" {
			continue
		}
		if err := c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "cat-" + row.name}}); err != nil {
			t.Fatal(err)
		}
		if row.retain || row.typ == "volume" {
			retained = append(retained, row)
		}
	}
	t.Run("Delete removes the objects, data volumes and state", func(t *testing.T) {
		testenv.Eventually(t, 2*time.Minute, "deprovisioned", func() error {
			for _, row := range catalogRows {
				if row.retain || row.typ == "volume" {
					continue
				}
				if err := allGone(provisioned(row)); err != nil {
					return fmt.Errorf("%s: %w", row.name, err)
				}
				if err := allGone([]client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: claims[row.name].Name + "-outputs"}}}); err != nil {
					return fmt.Errorf("%s: %w", row.name, err)
				}
			}
			return nil
		})
		t.Logf("Delete types deprovisioned %s after their Workloads were deleted", time.Since(start).Round(10*time.Millisecond))
	})

	t.Run("Retain keeps the data, and a new Workload binds to it", func(t *testing.T) {
		if len(retained) != 2 {
			t.Fatalf("retained rows %v", retained)
		}
		kept := map[string]map[string]types.UID{}
		retainedClaim := map[string]types.UID{}
		for _, row := range retained {
			// A retained claim stays, owned by no Workload; a new Workload of the same name
			// releases it and claims the same identity again.
			testenv.Eventually(t, time.Minute, row.name+" retained", func() error {
				cl, err := claimOf(row)
				if err != nil {
					return err
				}
				if owner := metav1.GetControllerOf(cl); owner != nil {
					return fmt.Errorf("still owned by %s", owner.Name)
				}
				retainedClaim[row.name] = cl.UID
				return nil
			})
			objs, err := uids(provisioned(row))
			if err != nil {
				t.Fatalf("%s: Retain must keep what it provisioned: %v", row.name, err)
			}
			kept[row.name] = objs
			if err := c.Create(ctx, catalogWorkload(row)); err != nil {
				t.Fatal(err)
			}
		}
		for _, row := range retained {
			testenv.Eventually(t, 2*time.Minute, row.name+" Bound again", func() error {
				cl, err := claimOf(row)
				if err != nil {
					return err
				}
				if cl.UID == retainedClaim[row.name] {
					return fmt.Errorf("still the retained claim")
				}
				claims[row.name] = cl
				return bound(row, cl)
			})
			again, err := uids(provisioned(row))
			if err != nil {
				t.Fatal(err)
			}
			for name, uid := range kept[row.name] {
				if again[name] != uid {
					t.Errorf("%s: %s is not the retained object", row.name, name)
				}
			}
			plain, secret := outputsOf(t, claims[row.name])
			if fmt.Sprint(plain) != fmt.Sprint(outputs[row.name]) || fmt.Sprint(secret) != fmt.Sprint(secretOutputs[row.name]) {
				t.Errorf("%s: the re-created claim must bind with the same outputs and credentials", row.name)
			}
		}
	})
}
