package hostile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Secret references, shared instances, volumes by name.

// sharingLimits are the platform's definitions the shared-instance tests try, shared from teamA
// with the namespaces labelled share=yes (teamB): a postgres class the platform retains, and one
// of which a consumer namespace holds two instances at most. Each instance is a Secret and its
// state: the data a tenant would delete, or multiply. platform() puts them before the catalog's.
func sharingLimits() []any {
	kv := func(class, prefix, policy string, sharing map[string]any) map[string]any {
		sharing["namespace"], sharing["namespaceSelector"] = teamA, map[string]any{"matchLabels": map[string]any{"share": "yes"}}
		return map[string]any{
			"uri": "template://hostile/" + class, "type": "postgres", "class": class, "deprovisionPolicy": policy, "sharing": sharing,
			"init":             "name: " + prefix + "-{{ substr 0 10 .Guid }}\n",
			"state":            "password: {{ dig \"password\" (randAlphaNum 32) .State | quote }}\n",
			"outputs":          "host: {{ .Init.name }}.{{ .Namespace }}\npassword: {{ encodeSecretRef .Init.name \"password\" }}\n",
			"manifests":        "- {apiVersion: v1, kind: Secret, metadata: {name: {{ .Init.name }}}, stringData: {password: {{ .State.password | quote }}}}\n",
			"expected_outputs": []any{"host", "password"},
		}
	}
	return []any{
		kv("retained", "rkv", "Retain", map[string]any{}),
		kv("bounded", "bkv", "Delete", map[string]any{"maxInstancesPerNamespace": 2}),
	}
}

// ownerDatabase is the victim owner's postgres: its Secret (the password) and its stateful
// set, as its claim lists them.
func ownerDatabase(t *testing.T) (secret, statefulSet string) {
	t.Helper()
	for _, o := range claimOf(t, teamA, "owner", "db").Status.Resources {
		switch o.Kind {
		case "Secret":
			secret = o.Name
		case "StatefulSet":
			statefulSet = o.Name
		}
	}
	if secret == "" || statefulSet == "" {
		t.Fatal("the owner's database lists no Secret or stateful set")
	}
	return secret, statefulSet
}

// noClaims checks that nothing was claimed for the Workload.
func noClaims(t *testing.T, ns, name string) {
	t.Helper()
	var list scorev1b1.ResourceClaimList
	if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Fatalf("%d claims were made for the refused %s/%s", len(list.Items), ns, name)
	}
}

// The catalog's endpoint echoes params.path into its url; were the secret reference a tenant
// writes there resolved, mallory would copy her colleague owner's database password, and a
// platform Secret she cannot read, into her own outputs Secret. Each is refused before
// anything is claimed, and reads nothing.
func TestHostileSecretReferenceReadsNothing(t *testing.T) {
	secret, _ := ownerDatabase(t)
	password := secretValue(t, teamA, secret, "password")
	platformToken := "the-platforms-token-" + strings.Repeat("7", 20)
	platform := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "platform-token"}, StringData: map[string]string{"token": platformToken}}
	if err := admin.Create(ctx, platform); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, thief, ref string }{
		{"a colleague's database password", "thief-ref-password", secret + "_password"},
		{"a platform Secret", "thief-ref-platform", "platform-token_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thief := tc.thief
			// The endpoint of the Workload owner (the resource's key names it), its path the
			// reference.
			create(t, testenv.Workload(teamA, thief, testenv.WithPort("http", 80), testenv.WithVar("URL", "${resources.owner.url}"),
				testenv.WithResource("owner", "endpoint", testenv.ResourceParams(`{"path": "/🔐💬`+tc.ref+`💬🔐"}`))))
			msg := refused(t, teamA, thief, scorev1b1.ReasonSpecInvalid)
			if !strings.Contains(msg, "spec.resources.owner.params.path: The value holds 🔐 or 💬, the characters of a secret reference") {
				t.Fatalf("message %q", msg)
			}
			noClaims(t, teamA, thief)
			var secrets corev1.SecretList
			if err := admin.List(ctx, &secrets, client.InNamespace(teamA)); err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets.Items {
				if s.Name == secret || s.Name == platform.Name || !strings.HasPrefix(s.Name, thief) {
					continue
				}
				for _, v := range s.Data {
					if contains(password, v) || contains(platformToken, v) {
						t.Fatalf("a Secret of mallory's Workload, %s, holds the value", s.Name)
					}
				}
			}
			othersUntouched(t)
		})
	}
}

// A plain-name volume source must not mount any volume claim of the namespace read-write:
// mallory would mount her colleague owner's private database volume, and by holding it keep
// the re-created database from starting. Her Workload is refused, naming the volume, and
// nothing of it is deployed.
func TestHostileVolumeByNameMountsNoColleaguesDatabase(t *testing.T) {
	_, set := ownerDatabase(t)
	volume := "data-" + set + "-0" // the stateful set's claim of its volume template "data"
	w := testenv.Workload(teamA, "thief-volume", testenv.WithPort("http", 80))
	c := w.Spec.Containers["main"]
	c.Volumes = map[string]scorev1b1.ContainerVolume{"/stolen": {Source: volume}}
	w.Spec.Containers["main"] = c
	create(t, w)
	msg := refused(t, teamA, w.Name, scorev1b1.ReasonPolicyViolation)
	if want := "spec.containers.main.volumes./stolen.source: Volume " + volume + " belongs to a provisioned dependency"; !strings.Contains(msg, want) {
		t.Fatalf("message %q, want %q", msg, want)
	}
	plan := &scorev1b1.WorkloadPlan{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: teamA, Name: w.Name}, plan); !apierrors.IsNotFound(err) {
		t.Fatalf("a plan was written for the refused Workload (%v)", err)
	}
	othersUntouched(t)
}

// Once no other claim is bound to a shared instance the platform retains, mallory, from a
// namespace the platform admits, binds to it with score.dev/deprovision-policy: Delete, to
// delete its data and its state in the sharing namespace by deleting her Workload. Her claim is
// refused, gets nothing of the instance, and her Workload's deletion deletes none of it.
func TestHostileDeleteOnASharedRetainedInstanceDeletesNothing(t *testing.T) {
	retained := func(r *scorev1b1.Resource) { r.Class = ptrTo("retained") }
	keeper := testenv.Workload(teamA, "keeper", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", retained, testenv.ResourceID("ledger")))
	if err := admin.Create(ctx, keeper); err != nil {
		t.Fatal(err)
	}
	ready(t, teamA, "keeper", 2*time.Minute)
	kept := claimOf(t, teamA, "keeper", "db")
	data := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: kept.Status.Resources[0].Name}}
	state := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "score-state-" + kept.Status.Instance}}
	for _, s := range []*corev1.Secret{data, state} {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			t.Fatal(err)
		}
	}
	password := string(data.Data["password"])
	// The platform's keeper goes, and its retained claim with it: no claim is bound to the
	// instance, its data and state stay.
	if err := admin.Delete(ctx, keeper); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, admin, keeper)
	if err := admin.Delete(ctx, kept); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, admin, kept)

	thief := testenv.Workload(teamB, "thief-retained", testenv.WithPort("http", 80), testenv.WithVar("PGPASSWORD", "${resources.db.password}"),
		testenv.WithResource("db", "postgres", retained, testenv.ResourceID("ledger"), testenv.ResourceAnnotation(scorev1b1.AnnotationDeprovisionPolicy, "Delete")))
	if err := tenant.Create(ctx, thief); err != nil {
		t.Fatal(err)
	}
	refused(t, teamB, thief.Name, scorev1b1.ReasonPermissionDenied)
	c := claimOf(t, teamB, thief.Name, "db")
	if !strings.Contains(c.Status.Message, "The claim's deprovision policy Delete is not Retain, the platform's for the shared postgres ledger") || c.Status.SecretRef != nil {
		t.Fatalf("claim: %s (outputs Secret %v)", c.Status.Message, c.Status.SecretRef)
	}
	if err := tenant.Delete(ctx, thief); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, admin, thief)
	for _, s := range []*corev1.Secret{data, state} {
		now := &corev1.Secret{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(s), now); err != nil || now.UID != s.UID {
			t.Fatalf("the retained instance's %s went with mallory's Workload (%v)", s.Name, err)
		}
	}
	if got := secretValue(t, teamA, data.Name, "password"); got != password {
		t.Fatal("the retained data changed")
	}
	othersUntouched(t)
}

// An admitted tenant must not create instances in the sharing namespace without bound, one
// per id, outside its own namespace's quota. Mallory asks four of a class of which
// the platform lets a namespace hold two, at once: two are provisioned, two refused, and the
// sharing namespace holds two instances of hers.
func TestHostileSharedInstancesPerNamespaceAreBounded(t *testing.T) {
	bounded := func(r *scorev1b1.Resource) { r.Class = ptrTo("bounded") }
	opts := []testenv.WorkloadOption{testenv.WithPort("http", 80)}
	for i := range 4 {
		opts = append(opts, testenv.WithResource(fmt.Sprintf("db%d", i), "postgres", bounded, testenv.ResourceID(fmt.Sprintf("many-%d", i))))
	}
	create(t, testenv.Workload(teamB, "hoarder", opts...))
	refused(t, teamB, "hoarder", scorev1b1.ReasonPolicyViolation)
	var bound, atBound []string
	testenv.Eventually(t, time.Minute, "every claim answered", func() error {
		bound, atBound = nil, nil
		for i := range 4 {
			c, err := findClaim(teamB, "hoarder", fmt.Sprintf("db%d", i))
			if err != nil {
				return err
			}
			switch {
			case c.Status.Phase == scorev1b1.ClaimPhaseBound:
				bound = append(bound, c.Status.Instance)
			case c.Status.Reason == scorev1b1.ReasonPolicyViolation && strings.Contains(c.Status.Message, "the most the platform allows (sharing.maxInstancesPerNamespace: 2)"):
				atBound = append(atBound, c.Name)
			default:
				return fmt.Errorf("%s: %s %s", c.Name, c.Status.Phase, c.Status.Message)
			}
		}
		return nil
	})
	if len(bound) != 2 || len(atBound) != 2 {
		t.Fatalf("%d provisioned, %d refused; want 2 and 2", len(bound), len(atBound))
	}
	var secrets corev1.SecretList
	if err := admin.List(ctx, &secrets, client.InNamespace(teamA)); err != nil {
		t.Fatal(err)
	}
	instances := 0
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "bkv-") {
			instances++
		}
	}
	if instances != 2 {
		t.Fatalf("the sharing namespace holds %d instances of the class, want 2", instances)
	}
	othersUntouched(t)
}
