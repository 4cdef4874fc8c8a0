package apidenial

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "score.dev", Resource: "resourceclaims"}
	cases := []struct {
		name string
		err  error
		want scorev1b1.Reason
		ok   bool
	}{
		{"policy", apierrors.NewForbidden(gr, "x", errors.New(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`)), scorev1b1.ReasonPolicyViolation, true},
		{"policy with reason Invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "x", field.ErrorList{field.Invalid(field.NewPath("spec"), "x", "ValidatingAdmissionPolicy 'p' with binding 'b' denied request")}), scorev1b1.ReasonPolicyViolation, true},
		{"webhook", apierrors.NewForbidden(gr, "x", errors.New(`admission webhook "v.example.com" denied the request`)), scorev1b1.ReasonPolicyViolation, true},
		{"quota", apierrors.NewForbidden(gr, "x", errors.New(`exceeded quota: q, requested: count/resourceclaims.score.dev=1, used: 1, limited: 1`)), scorev1b1.ReasonQuotaExceeded, true},
		{"rbac", apierrors.NewForbidden(gr, "x", errors.New(`User "system:serviceaccount:a:b" cannot create resource "resourceclaims"`)), scorev1b1.ReasonPermissionDenied, true},
		{"conflict is retried", apierrors.NewConflict(gr, "x", errors.New("changed")), "", false},
		{"plain invalid is not a denial", apierrors.NewInvalid(schema.GroupKind{Group: "score.dev", Kind: "ResourceClaim"}, "x", field.ErrorList{field.Required(field.NewPath("spec"), "")}), "", false},
		{"nil", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Classify(tc.err)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("want %s/%v, got %s/%v", tc.want, tc.ok, got, ok)
			}
		})
	}
}
