package tplfuncs

import (
	"errors"
	"io"
	"strings"
	"testing"
	"text/template"
)

func TestProvisionerFunctions(t *testing.T) {
	t.Setenv("SCORE_TPLFUNCS_TEST", "controller-secret")
	for _, tc := range []struct {
		text, want, err string
	}{
		{`{{ encodeSecretRef "db" "password" }}`, "🔐💬db_password💬🔐", ""},
		{`{{ "a" | upper }}`, "A", ""},
		{`{{ env "SCORE_TPLFUNCS_TEST" }}`, "", "env is not available"},
		{`{{ expandenv "$SCORE_TPLFUNCS_TEST" }}`, "", "expandenv is not available"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			tpl, err := template.New("t").Funcs(Provisioner()).Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			err = tpl.Execute(&out, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(out.String(), "controller-secret") {
					t.Fatalf("got %q, %v; want an error %q and no value", out.String(), err, tc.err)
				}
				return
			}
			if err != nil || out.String() != tc.want {
				t.Fatalf("got %q, %v; want %q", out.String(), err, tc.want)
			}
		})
	}
}

// waitFor stops a template with a *Waiting that errors.As finds through text/template's
// wrapping, so the provisioner can tell a wait from a failure.
func TestWaitFor(t *testing.T) {
	tpl := template.Must(template.New("t").Funcs(Provisioner()).Parse(`{{ waitFor "workload backend" }}`))
	err := tpl.Execute(io.Discard, nil)
	var waiting *Waiting
	if !errors.As(err, &waiting) || waiting.For != "workload backend" {
		t.Fatalf("error %v, want a wait for workload backend", err)
	}
}
