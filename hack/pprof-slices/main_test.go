package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

const traces = `File: kube-apiserver
Type: cpu
Duration: 2s, Total samples = 60ms ( 3.00%)
-----------+-------------------------------------------------------
      10ms   github.com/google/cel-go/interpreter.(*evalFold).Exec
             k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel.(*Validator).Validate
             k8s.io/apiextensions-apiserver/pkg/registry/customresource.statusStrategy.ValidateUpdate
             sigs.k8s.io/structured-merge-diff/v6/typed.handleAtom
             k8s.io/apiextensions-apiserver/pkg/registry/customresource.(*StatusREST).Update
-----------+-------------------------------------------------------
      20ms   encoding/json.Marshal (inline)
             k8s.io/apiserver/plugin/pkg/audit/log.(*backend).logEvent
             k8s.io/apiserver/pkg/endpoints/filters.withAuthorization.func1
-----------+-------------------------------------------------------
      30ms   runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
     1.5ms   k8s.io/apiserver/pkg/storage/etcd3.(*store).GuaranteedUpdate
             k8s.io/apiextensions-apiserver/pkg/registry/customresource.(*StatusREST).Update
-----------+-------------------------------------------------------
`

// A sample goes to the first slice it has a frame of (CEL before managed fields, audit before
// JSON); a wrapper of whole requests (withAuthorization) does not make it authorization's.
func TestDivide(t *testing.T) {
	samples, err := parseTraces(strings.NewReader(traces))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 4 || samples[0].cpu != 10*time.Millisecond || samples[3].cpu != 1500*time.Microsecond || len(samples[0].frames) != 5 {
		t.Fatalf("%+v", samples)
	}
	s := divide(samples, nil)
	for name, want := range map[string]time.Duration{
		"CEL": 10 * time.Millisecond, "audit": 20 * time.Millisecond, "garbage collection (background)": 30 * time.Millisecond,
		"storage (etcd3, etcd client, gRPC)": 1500 * time.Microsecond, "managed fields": 0, "authentication, authorization": 0, "JSON, other": 0,
	} {
		if got := s.exclusive[name]; got != want {
			t.Errorf("%s: exclusive %v, want %v", name, got, want)
		}
	}
	if s.inclusive["managed fields"] != 10*time.Millisecond || s.inclusive["JSON, other"] != 20*time.Millisecond {
		t.Errorf("inclusive %v", s.inclusive)
	}
	f := divide(samples, regexp.MustCompile(`StatusREST\).Update$`))
	if f.total != 11500*time.Microsecond || f.all != 61500*time.Microsecond {
		t.Errorf("focus: %v of %v", f.total, f.all)
	}
}

func TestParseTracesRejectsAStackWithoutValue(t *testing.T) {
	if _, err := parseTraces(strings.NewReader("-----------+----\n   runtime.main\n")); err == nil {
		t.Fatal("no error")
	}
}
