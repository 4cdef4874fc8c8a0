package hosts

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Registration
		want string
	}{
		{"valid", Registration{Name: "edge-1", Namespaces: []string{"shop"}, Address: "10.0.0.1"}, ""},
		{"a name that is not a DNS label", Registration{Name: "Edge_1", Namespaces: []string{"shop"}, Address: "10.0.0.1"}, "must be a DNS label"},
		{"a name too long for its ServiceAccount", Registration{Name: strings.Repeat("a", 60), Namespaces: []string{"shop"}, Address: "10.0.0.1"}, "at most 52 characters"},
		{"no namespace", Registration{Name: "edge-1", Address: "10.0.0.1"}, "--namespace"},
		{"a namespace that is not one", Registration{Name: "edge-1", Namespaces: []string{"a/b"}, Address: "10.0.0.1"}, `namespace "a/b"`},
		{"no address", Registration{Name: "edge-1", Namespaces: []string{"shop"}}, "--address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
