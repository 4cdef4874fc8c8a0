package mirror

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func exposure(uid string, gen int64, exposures ...scorev1b1.Exposure) *scorev1b1.WorkloadExposure {
	e := &scorev1b1.WorkloadExposure{}
	e.Spec.WorkloadRef = scorev1b1.WorkloadRef{Name: "web", Namespace: "ns", UID: uid}
	e.Status.ObservedWorkloadGeneration = gen
	e.Status.Exposures = exposures
	return e
}

// onDocker is an exposure the Docker runtime publishes.
func onDocker(e *scorev1b1.WorkloadExposure) *scorev1b1.WorkloadExposure {
	e.Spec.RuntimeClass = scorev1b1.RuntimeClassDocker
	return e
}

func published(u string, scope scorev1b1.ExposureScope) scorev1b1.Exposure {
	return scorev1b1.Exposure{URL: u, Scope: scope}
}

func TestMirror(t *testing.T) {
	prev := ptr.To("https://old.example.com")
	cases := []struct {
		name         string
		exposure     *scorev1b1.WorkloadExposure
		previous     *string
		policy       Policy
		want         *string
		wantRejected bool
		wantIgnored  bool
	}{
		{name: "no exposure: null", exposure: nil, want: nil},
		{name: "nothing published yet", exposure: exposure("u1", 0), previous: nil, wantIgnored: true},
		{name: "first exposure mirrored as is", exposure: exposure("u1", 2, published("https://app.example.com/x?y=1", "Public"), published("http://web.ns.svc.cluster.local", "ClusterLocal")), want: ptr.To("https://app.example.com/x?y=1")},
		{name: "stale generation keeps the previous value", exposure: exposure("u1", 1, published("https://new.example.com", "Public")), previous: prev, want: prev, wantIgnored: true},
		{name: "newer generation is fine", exposure: exposure("u1", 5, published("https://new.example.com", "Public")), previous: prev, want: ptr.To("https://new.example.com")},
		{name: "another UID is ignored", exposure: exposure("u0", 2, published("https://new.example.com", "Public")), previous: prev, want: prev, wantIgnored: true},
		{name: "invalid URL keeps the previous value", exposure: exposure("u1", 2, published("not a url", "Public")), previous: prev, want: prev, wantRejected: true},
		{name: "URL without host", exposure: exposure("u1", 2, published("http://", "Public")), previous: prev, want: prev, wantRejected: true},
		{name: "relative URL", exposure: exposure("u1", 2, published("/path", "Public")), previous: nil, want: nil, wantRejected: true},
		{name: "localhost is never an endpoint", exposure: exposure("u1", 2, published("http://localhost:8080", "Public")), previous: prev, want: prev, wantRejected: true},
		{name: "loopback address", exposure: exposure("u1", 2, published("http://127.0.0.1", "Public")), previous: prev, want: prev, wantRejected: true},
		{name: "a Docker host's loopback address is the platform's, mirrored", exposure: onDocker(exposure("u1", 2, published("http://127.0.0.1:32768", "VPC"))), previous: prev, want: ptr.To("http://127.0.0.1:32768")},
		{name: "a Docker host's URL with credentials is still rejected", exposure: onDocker(exposure("u1", 2, published("http://u:p@127.0.0.1:32768", "VPC"))), previous: prev, want: prev, wantRejected: true},
		{name: "credentials in a URL are rejected", exposure: exposure("u1", 2, published("https://user:secret@app.example.com", "Public")), previous: nil, want: nil, wantRejected: true},
		{name: "empty exposures clear the endpoint", exposure: exposure("u1", 2), previous: prev, want: nil},
		{name: "public only hides a cluster-local endpoint", exposure: exposure("u1", 2, published("http://web.ns.svc.cluster.local:80", "ClusterLocal")), policy: Policy{PublicOnly: true}, want: nil},
		{name: "public only keeps a public endpoint", exposure: exposure("u1", 2, published("https://app.example.com", "Public")), policy: Policy{PublicOnly: true}, want: ptr.To("https://app.example.com")},
		{name: "template overrides", exposure: exposure("u1", 2, published("http://web.ns.svc.cluster.local", "ClusterLocal")), policy: Policy{EndpointTemplate: "https://{{.workload.name}}.{{.workload.namespace}}.example.com"}, want: ptr.To("https://web.ns.example.com")},
		{name: "template giving a bad URL keeps the previous", exposure: exposure("u1", 2, published("https://app.example.com", "Public")), previous: prev, policy: Policy{EndpointTemplate: "{{.workload.name}}"}, want: prev, wantRejected: true},
		{name: "template waits for a valid runtime URL", exposure: exposure("u1", 2), policy: Policy{EndpointTemplate: "https://{{.workload.name}}.example.com"}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Mirror(Input{Exposure: tc.exposure, WorkloadName: "web", Namespace: "ns", WorkloadUID: "u1", WorkloadGeneration: 2, Previous: tc.previous, Policy: tc.policy})
			if (r.Endpoint == nil) != (tc.want == nil) || (r.Endpoint != nil && *r.Endpoint != *tc.want) {
				t.Fatalf("endpoint: want %v, got %v (rejected %q, ignored %q)", deref(tc.want), deref(r.Endpoint), r.Rejected, r.Ignored)
			}
			if (r.Rejected != "") != tc.wantRejected {
				t.Fatalf("rejected: want %v, got %q", tc.wantRejected, r.Rejected)
			}
			if (r.Ignored != "") != tc.wantIgnored {
				t.Fatalf("ignored: want %v, got %q", tc.wantIgnored, r.Ignored)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestNormalize(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status}
	}
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  *Signal
	}{
		{"none", nil, nil},
		{"healthy", []metav1.Condition{cond("Healthy", "True")}, &Signal{"True", scorev1b1.ReasonSucceeded}},
		{"available", []metav1.Condition{cond("Available", "True")}, &Signal{"True", scorev1b1.ReasonSucceeded}},
		{"a false condition carries nothing", []metav1.Condition{cond("Healthy", "False")}, nil},
		{"provisioning", []metav1.Condition{cond("Provisioning", "True")}, &Signal{"Unknown", scorev1b1.ReasonRuntimeProvisioning}},
		{"applying", []metav1.Condition{cond("Applying", "True")}, &Signal{"Unknown", scorev1b1.ReasonRuntimeProvisioning}},
		{"selecting", []metav1.Condition{cond("Selecting", "True")}, &Signal{"Unknown", scorev1b1.ReasonRuntimeProvisioning}},
		{"lb pending", []metav1.Condition{cond("LBPending", "True"), cond("Healthy", "True")}, &Signal{"False", scorev1b1.ReasonNetworkUnavailable}},
		{"ingress pending", []metav1.Condition{cond("IngressPending", "True")}, &Signal{"False", scorev1b1.ReasonNetworkUnavailable}},
		{"dns not ready", []metav1.Condition{cond("DNSNotReady", "True")}, &Signal{"False", scorev1b1.ReasonNetworkUnavailable}},
		{"degraded beats healthy", []metav1.Condition{cond("Healthy", "True"), cond("Degraded", "True")}, &Signal{"True", scorev1b1.ReasonRuntimeDegraded}},
		{"policy beats everything", []metav1.Condition{cond("Healthy", "True"), cond("PolicyViolation", "True")}, &Signal{"False", scorev1b1.ReasonPolicyViolation}},
		{"quota", []metav1.Condition{cond("QuotaExceeded", "True")}, &Signal{"False", scorev1b1.ReasonQuotaExceeded}},
		{"permission", []metav1.Condition{cond("PermissionDenied", "True")}, &Signal{"False", scorev1b1.ReasonPermissionDenied}},
		{"unknown types are ignored", []metav1.Condition{cond("Frobnicated", "True")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Normalize(tc.conds)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("want %+v, got %+v", tc.want, got)
			}
		})
	}
}

// ValidateURL refuses the local machine however it is spelled: comparing the host with
// "localhost" and parsing it with net.ParseIP only would mirror it as a Workload's endpoint
// (FuzzValidateURL found "A://0000000000000000", which resolvers read as 0.0.0.0).
func TestValidateURLRefusesTheLocalMachineHoweverSpelled(t *testing.T) {
	for _, raw := range []string{
		"http://LOCALHOST:8080", "http://localhost./", "http://api.LocalHost./",
		"http://127.0.0.1./", "http://[::1%25eth0]/", "http://[::ffff:127.0.0.1]/",
		"http://127.1/", "http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/",
		"http://0.0.0.0:80/", "http://[::]/", "A://0000000000000000",
	} {
		if err := ValidateURL(raw); err == nil {
			t.Errorf("%s was accepted", raw)
		}
	}
	for _, raw := range []string{"http://128.0.0.1/", "http://10.1/", "http://localhost.example.com/", "http://1_27.0.0.1/", "http://0x7g.0.0.1/", "http://[2001:db8::1]/"} {
		if err := ValidateURL(raw); err != nil {
			t.Errorf("%s was refused: %v", raw, err)
		}
	}
}
