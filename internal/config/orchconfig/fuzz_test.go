package orchconfig

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse feeds any bytes to Parse. A document is either valid — a Config that Validate
// accepts, decoding again to the same Config — or refused with an InvalidError listing at
// least one problem, each placed by a line or a field path (only an empty document has
// neither). Seeds: the sample config, alone and with the development catalog, and the
// parse tests' documents.
func FuzzParse(f *testing.F) {
	sample, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	assembled, err := DevelopmentConfig(os.DirFS("../../.."))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(assembled)
	for _, doc := range []string{parseBase, "", parseBase + "defaults: profile: web\n", parseBase + "profile: web\n", parseBase + "---\n" + parseBase,
		strings.Replace(parseBase, "version: 1.0.0", "version: latest", 1)} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err == nil {
			if cfg == nil {
				t.Fatal("no error and no config")
			}
			if errs := Validate(cfg); len(errs) > 0 {
				t.Fatalf("Parse accepted a document Validate refuses: %v", errs)
			}
			var again Config
			dec := yaml.NewDecoder(bytes.NewReader(data))
			if err := dec.Decode(&again); err != nil || !reflect.DeepEqual(&again, cfg) {
				t.Fatalf("decoding again gives another config (%v)", err)
			}
			return
		}
		var inv *InvalidError
		if !errors.As(err, &inv) {
			t.Fatalf("want an InvalidError, got %T: %v", err, err)
		}
		if cfg != nil {
			t.Fatal("an invalid document returned a config")
		}
		if len(inv.Errors) == 0 {
			t.Fatal("an InvalidError without errors")
		}
		for _, fe := range inv.Errors {
			if fe.Message == "" {
				t.Fatalf("an error without a message: %+v", fe)
			}
			if fe.Line <= 0 && fe.Path == "" && fe.Message != "the document is empty" {
				t.Fatalf("an error placed by neither a line nor a path: %q", fe.Message)
			}
		}
	})
}
