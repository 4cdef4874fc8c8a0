package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/archive"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// kvChart is a chart with a Secret holding the password its values carry and a ConfigMap
// sized by a param.
func kvChart() ([]byte, error) {
	return archive.Pack(map[string][]byte{
		"kv/Chart.yaml":  []byte("apiVersion: v2\nname: kv\nversion: 1.0.0\n"),
		"kv/values.yaml": []byte("password: \"\"\nsize: small\n"),
		"kv/templates/secret.yaml": []byte(`apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-kv
stringData:
  password: {{ required "a password" .Values.password | quote }}
`),
		"kv/templates/configmap.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-kv
  namespace: {{ .Release.Namespace }}
data:
  size: {{ .Values.size | quote }}
`),
	})
}

// A helm:// provisioner renders its chart (from a ConfigMap, pinned by digest) with values
// from its template, applies the chart's objects like any manifests, and publishes outputs
// that read them: the password from the chart's Secret, into the outputs Secret only.
func TestHelmProvisioner(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "web-cache", "web", "cache", "helm-kv", "", scorev1b1.DeprovisionDelete)
	c.Spec.Params = jsonRaw(`{"size":"large"}`)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if !strings.Contains(string(c.Status.Outputs.Raw), `-kv.`+ns) || strings.Contains(string(c.Status.Outputs.Raw), "password") {
		t.Fatalf("outputs %s", c.Status.Outputs.Raw)
	}
	var release string
	for _, o := range c.Status.Resources {
		if o.Kind == "ConfigMap" {
			release = o.Name
		}
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, cm); err != nil || cm.Data["size"] != "large" {
		t.Fatalf("the chart's ConfigMap with the param as value: %v %v", cm.Data, err)
	}
	password := secretValue(t, ns, c.Status.SecretRef.Name, "password")
	if len(password) != 32 || secretValue(t, ns, release, "password") != password {
		t.Fatalf("the password the chart stored is the output: %q", password)
	}

	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	gone(t, cm)
}
