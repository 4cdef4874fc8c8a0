package members

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

func TestPodSecurityLabels(t *testing.T) {
	got := PodSecurityLabels(map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn-version": "latest", "team": "a", "kubernetes.io/metadata.name": "x"})
	if len(got) != 2 || got["pod-security.kubernetes.io/enforce"] != "restricted" || got["pod-security.kubernetes.io/warn-version"] != "latest" {
		t.Fatalf("%v", got)
	}
}

// What a failed request to a member is published as: the kind of failure, never the server's
// answer (a hostile server echoes the credentials it was sent) nor the request's URL.
func TestDescribe(t *testing.T) {
	echoed := apierrors.NewGenericServerResponse(http.StatusInternalServerError, "get", schema.GroupResource{}, "", "you sent Bearer s3cret", 0, true)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{echoed, "500 Internal Server Error"},
		{fmt.Errorf("applying Deployment web: %w", apierrors.NewServiceUnavailable("etcd said s3cret")), "503 Service Unavailable"},
		{&url.Error{Op: "Get", URL: "https://admin:s3cret@m:6443/version?token=s3cret", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, "dial tcp: connection refused"},
	} {
		if got := describe(tc.err); got != tc.want || strings.Contains(got, "s3cret") {
			t.Errorf("describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A member client is limited as the hub's is: client-go's default would hold each kind's
// requests to 5 a second, and a lost member's clean-up of 200 Workloads took 94.7 s that way.
func TestMemberClientsTakeTheHubsRateLimit(t *testing.T) {
	reg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "eu"}, Data: map[string][]byte{clusters.KeyServer: []byte("https://eu.example:6443"), clusters.KeyToken: []byte("t")}}
	for _, tc := range []struct {
		hub       *rest.Config
		qps       float32
		burst     int
		userAgent string
	}{
		{&rest.Config{QPS: -1, UserAgent: "score-controllers/runtime"}, -1, 0, "score-controllers/runtime"},
		{&rest.Config{QPS: 50, Burst: 100}, 50, 100, ""},
		{nil, 0, 0, ""},
	} {
		cfg, err := (&Pool{HubConfig: tc.hub}).memberConfig(reg)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.QPS != tc.qps || cfg.Burst != tc.burst || cfg.UserAgent != tc.userAgent || cfg.Host != "https://eu.example:6443" {
			t.Errorf("hub %+v: member QPS %v, burst %d, user agent %q, host %q", tc.hub, cfg.QPS, cfg.Burst, cfg.UserAgent, cfg.Host)
		}
	}
}
