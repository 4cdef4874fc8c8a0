package members

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
