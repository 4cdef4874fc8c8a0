// Package scheme is the one runtime scheme the project's clients use: Kubernetes' built-in
// kinds, CustomResourceDefinitions, and the score.dev kinds.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// New returns a scheme with every kind the project reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, scorev1b1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the built-in kinds register without error
		}
	}
	return s
}
